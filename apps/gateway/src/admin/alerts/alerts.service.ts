import { ApiError, formatMoney } from '@infer/contracts';
import type { Db } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { PRISMA } from '../../infra/tokens.js';

/**
 * The alerts raised for budgets and token allowances (AlertEvent, ADR 0101) and each one's delivery
 * log (AlertDelivery), newest first: GET /admin/alerts?member=&status=&limit=.
 */
@Injectable()
export class AlertsService {
  constructor(@Inject(PRISMA) private readonly db: Db) {}

  async list(q: Record<string, unknown>) {
    const member = typeof q.member === 'string' && q.member ? q.member : undefined;
    const status = typeof q.status === 'string' && q.status ? q.status : undefined;
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500)
      throw ApiError.invalid('`limit` must be a whole number from 1 to 500.', 'limit');
    if (status && !['pending', 'delivered', 'failed', 'unsent'].includes(status))
      throw ApiError.invalid('`status` is pending, delivered, failed or unsent.', 'status');
    if (member?.includes('\u0000'))
      throw ApiError.invalid('`member` must not contain NUL characters.', 'member');
    const rows = await this.db.alertEvent.findMany({
      where: { ...(member ? { memberId: member } : {}), ...(status ? { status } : {}) },
      orderBy: { id: 'desc' },
      take: limit,
      include: { deliveries: { orderBy: { attempt: 'asc' } } },
    });
    const amount = (unit: string, v: bigint) => (unit === 'nano_usd' ? formatMoney(v) : Number(v));
    return {
      object: 'list',
      data: rows.map((a) => ({
        id: `alert_${a.id}`,
        object: 'alert',
        created_at: Math.floor(+a.createdAt / 1000),
        scope: a.scope,
        member_id: a.memberId,
        key_id: a.keyId,
        limit: a.limitName,
        threshold_percent: a.threshold,
        unit: a.unit === 'nano_usd' ? 'usd' : 'tokens',
        used: amount(a.unit, a.used),
        limit_value: amount(a.unit, a.limitValue),
        period: {
          id: a.periodId,
          start: Math.floor(+a.periodStart / 1000),
          end: Math.floor(+a.periodEnd / 1000),
        },
        status: a.status,
        attempts: a.attempts,
        delivered_at: a.deliveredAt ? Math.floor(+a.deliveredAt / 1000) : null,
        deliveries: a.deliveries.map((d) => ({
          attempt: d.attempt,
          at: Math.floor(+d.at / 1000),
          url: d.url,
          status: d.status,
          error: d.error,
          duration_ms: d.durationMs,
        })),
      })),
    };
  }
}
