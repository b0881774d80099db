import { ApiError, BATCH_STATUSES } from '@infer/contracts';
import type { Db } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { batchView } from '../../batch/views.js';
import { PRISMA } from '../../infra/tokens.js';

/**
 * The work behind BatchesAdminController (batches.controller.ts).
 *
 * GET /admin/members/{memberId}/batches?status=&after=&limit=: one page of a member's batches, newest
 * first, with their progress (lines that have their output or error line / all lines). `after` is the
 * id of the last batch of the previous page; `next_after` is the cursor of the next page (null on the
 * last). For running batches `request_counts` are the live counts of the checkpoint rows. Any operator
 * role may read.
 */
@Injectable()
export class BatchesAdminService {
  constructor(@Inject(PRISMA) private readonly db: Db) {}

  async list(memberId: string, q: Record<string, unknown>) {
    const status = typeof q.status === 'string' && q.status ? q.status : undefined;
    if (status && !(BATCH_STATUSES as readonly string[]).includes(status)) {
      throw ApiError.invalid(`Unknown batch status '${status.slice(0, 32)}'.`, 'status');
    }
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      throw ApiError.invalid('`limit` must be an integer from 1 to 500.', 'limit');
    }
    const afterId = typeof q.after === 'string' && q.after ? q.after : undefined;
    let cursor: { createdAt: Date; id: string } | undefined;
    if (afterId) {
      const row =
        afterId.length <= 128
          ? await this.db.batch.findFirst({
              where: { id: afterId, memberId },
              select: { createdAt: true, id: true },
            })
          : null;
      if (!row) throw ApiError.invalid('`after` is not a batch of this member.', 'after');
      cursor = row;
    }
    const rows = await this.db.batch.findMany({
      where: {
        memberId,
        ...(status ? { status } : {}),
        ...(cursor
          ? {
              OR: [
                { createdAt: { lt: cursor.createdAt } },
                { createdAt: cursor.createdAt, id: { lt: cursor.id } },
              ],
            }
          : {}),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit + 1,
    });
    const more = rows.length > limit;
    if (more) rows.length = limit;
    // Lines done so far: the checkpoint rows of running batches, the final counts of the others.
    const running = rows
      .filter((r) => r.status === 'in_progress' || r.status === 'cancelling')
      .map((r) => r.id);
    const live = new Map<string, { completed: number; failed: number }>();
    if (running.length) {
      const counts = await this.db.batchLine.groupBy({
        by: ['batchId', 'ok'],
        where: { batchId: { in: running } },
        _count: { _all: true },
      });
      for (const c of counts) {
        const n = live.get(c.batchId) ?? { completed: 0, failed: 0 };
        if (c.ok) n.completed += c._count._all;
        else n.failed += c._count._all;
        live.set(c.batchId, n);
      }
    }
    return {
      object: 'list' as const,
      data: rows.map((r) => {
        const view = batchView(r);
        const counts = live.get(r.id);
        if (counts) view.request_counts = { total: r.total, ...counts };
        const c = view.request_counts;
        return {
          ...view,
          member_id: r.memberId,
          progress: r.total > 0 ? Math.min(1, (c.completed + c.failed) / r.total) : 0,
        };
      }),
      next_after: more ? (rows.at(-1)?.id ?? null) : null,
    };
  }
}
