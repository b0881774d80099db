import { ApiError, BATCH_STATUSES } from '@infer/contracts';
import type { Db } from '@infer/persistence';
import { Controller, Get, Inject, Param, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Public } from '../auth/public.decorator.js';
import { PRISMA } from '../infra/tokens.js';
import { AdminAccess } from '../operators/admin-access.js';
import { batchView } from './views.js';

/**
 * GET /admin/members/{memberId}/batches?status=&limit=: a member's batches, newest first, with their
 * progress (lines that have their output or error line / all lines). Any operator role may read.
 */
@Public()
@Controller('admin/members')
export class BatchesAdminController {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {}

  @Get(':memberId/batches')
  async list(
    @Req() req: FastifyRequest,
    @Param('memberId') memberId: string,
    @Query() q: Record<string, unknown>,
  ) {
    await this.access.require(req, 'read');
    const status = typeof q.status === 'string' && q.status ? q.status : undefined;
    if (status && !(BATCH_STATUSES as readonly string[]).includes(status)) {
      throw ApiError.invalid(`Unknown batch status '${status.slice(0, 32)}'.`, 'status');
    }
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      throw ApiError.invalid('`limit` must be an integer from 1 to 500.', 'limit');
    }
    const rows = await this.db.batch.findMany({
      where: { memberId, ...(status ? { status } : {}) },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit,
    });
    // Lines done so far: the checkpoint rows of running batches, the final counts of the others.
    const running = rows
      .filter((r) => r.status === 'in_progress' || r.status === 'cancelling')
      .map((r) => r.id);
    const done = new Map<string, number>();
    if (running.length) {
      const counts = await this.db.batchLine.groupBy({
        by: ['batchId'],
        where: { batchId: { in: running } },
        _count: { _all: true },
      });
      for (const c of counts) done.set(c.batchId, c._count._all);
    }
    return {
      object: 'list' as const,
      data: rows.map((r) => {
        const finished = done.get(r.id) ?? r.completed + r.failed;
        return {
          ...batchView(r),
          member_id: r.memberId,
          progress: r.total > 0 ? Math.min(1, finished / r.total) : 0,
        };
      }),
    };
  }
}
