import type { Logger } from '@infer/telemetry';
import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Public } from '../auth/public.decorator.js';
import { LOGGER } from '../infra/tokens.js';
import { BackingChecks } from './backing.service.js';

const KEYS = { postgresql: 'postgres', redis: 'redis', nats: 'nats' } as const;

@Controller()
export class HealthController {
  constructor(
    @Inject(BackingChecks) private readonly backing: BackingChecks,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  /** Alive: the process answers. */
  @Public()
  @Get('/healthz')
  healthz() {
    return { status: 'ok' };
  }

  /** Ready: PostgreSQL, Redis and NATS all answer within a second. */
  @Public()
  @Get('/readyz')
  async readyz(@Res() reply: FastifyReply): Promise<void> {
    const states = await this.backing.check();
    const checks: Record<string, 'ok' | 'down'> = {};
    for (const s of states) checks[KEYS[s.name]] = s.up ? 'ok' : 'down';
    const ready = states.every((s) => s.up);
    if (!ready) this.log.warn({ checks }, 'not ready');
    void reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks });
  }
}
