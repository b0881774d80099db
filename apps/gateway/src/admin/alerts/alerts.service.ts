import { type AdminAlertList, AlertQuerySchema, formatMoney, parseOrThrow } from '@infer/contracts';
import type { Db } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { PRISMA } from '../../infra/tokens.js';

/**
 * The alerts raised for budgets and token allowances (AlertEvent, ADR 0101) and each one's delivery
 * log (AlertDelivery), newest first, with the member's name and the key's prefix and name beside the
 * ids: GET /admin/alerts?member=&status=&limit=.
 */
@Injectable()
export class AlertsService {
  constructor(@Inject(PRISMA) private readonly db: Db) {}

  async list(query: unknown): Promise<AdminAlertList> {
    const q = parseOrThrow(AlertQuerySchema, query ?? {});
    const rows = await this.db.alertEvent.findMany({
      where: { ...(q.member ? { memberId: q.member } : {}), ...(q.status ? { status: q.status } : {}) },
      orderBy: { id: 'desc' },
      take: q.limit,
      include: { deliveries: { orderBy: { attempt: 'asc' } } },
    });
    // Names in two indexed look-ups for the whole page, not one per row.
    const memberIds = [...new Set(rows.map((a) => a.memberId))];
    const keyIds = [...new Set(rows.map((a) => a.keyId).filter((k): k is string => k !== null))];
    const [members, keys] = await Promise.all([
      memberIds.length
        ? this.db.member.findMany({ where: { id: { in: memberIds } }, select: { id: true, name: true } })
        : [],
      keyIds.length
        ? this.db.apiKey.findMany({
            where: { id: { in: keyIds } },
            select: { id: true, name: true, prefix: true },
          })
        : [],
    ]);
    const memberName = new Map(members.map((m) => [m.id, m.name]));
    const keyOf = new Map(keys.map((k) => [k.id, k]));
    const amount = (unit: string, v: bigint) => (unit === 'nano_usd' ? formatMoney(v) : Number(v));
    const secs = (d: Date) => Math.floor(+d / 1000);
    return {
      object: 'list',
      data: rows.map((a) => {
        const key = a.keyId ? keyOf.get(a.keyId) : undefined;
        const last = a.deliveries.at(-1);
        return {
          id: `alert_${a.id}`,
          object: 'alert' as const,
          created_at: secs(a.createdAt),
          scope: a.scope === 'key' ? ('key' as const) : ('member' as const),
          member_id: a.memberId,
          member_name: memberName.get(a.memberId) ?? null,
          key_id: a.keyId,
          key_prefix: key?.prefix ?? null,
          key_name: key?.name ?? null,
          limit: a.limitName,
          threshold_percent: a.threshold,
          unit: a.unit === 'nano_usd' ? ('usd' as const) : ('tokens' as const),
          used: amount(a.unit, a.used),
          limit_value: amount(a.unit, a.limitValue),
          period: { id: a.periodId, start: secs(a.periodStart), end: secs(a.periodEnd) },
          status: a.status as AdminAlertList['data'][number]['status'],
          attempts: a.attempts,
          delivered_at: a.deliveredAt ? secs(a.deliveredAt) : null,
          next_retry_at: a.status === 'pending' ? secs(a.nextAttemptAt) : null,
          last_error: a.status === 'delivered' ? null : (last?.error ?? null),
          deliveries: a.deliveries.map((d) => ({
            attempt: d.attempt,
            at: secs(d.at),
            url: d.url,
            status: d.status,
            error: d.error,
            duration_ms: d.durationMs,
          })),
        };
      }),
    };
  }
}
