import type { SelfUsage } from '@infer/contracts';
import { ApiKeysRepository, type Db } from '@infer/persistence/lazy';
import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PRISMA } from '../infra/tokens.js';
import { SelfUsageService } from './self-usage.service.js';

/**
 * GET /v1/usage: the calling key's and its member's usage, limits, remaining allowances and reset
 * times for the current period. Whose data is decided by the key alone: query parameters are ignored,
 * so no parameter can reach another member's numbers.
 */
@Controller('v1')
export class UsageController {
  private readonly keys: ApiKeysRepository;

  constructor(
    @Inject(SelfUsageService) private readonly usage: SelfUsageService,
    @Inject(PRISMA) db: Db,
  ) {
    this.keys = new ApiKeysRepository(db);
  }

  @Get('usage')
  async get(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<SelfUsage> {
    const auth = req.auth!;
    const key = await this.keys.find(auth.keyId);
    reply.header('cache-control', 'no-store');
    return this.usage.read({
      memberId: auth.memberId,
      tier: auth.tier,
      billingAnchor: auth.billingAnchor,
      key: {
        id: auth.keyId,
        name: key?.name ?? '',
        prefix: key?.prefix ?? '',
        overrides: auth.overrides,
        models: auth.models,
      },
    });
  }
}
