import { formatMoney, type LimitState } from '@infer/contracts';
import type { Db } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { PRISMA } from '../infra/tokens.js';
import { type LimitSubject, LimitsService } from './limits.service.js';
import { monthWindow } from './periods.js';

/** Cost of one model in a period, for a member or one key (dollars as exact decimal strings). */
export interface ModelSpend {
  model: string;
  requests: number;
  total_tokens: number;
  cost: string;
}

/** What a member, and one of its keys, spent in the current calendar month (UTC), by model. */
export interface PeriodSpend {
  /** Unix seconds, the month's start (inclusive) and end (exclusive). */
  from: number;
  to: number;
  currency: 'usd';
  member: { id: string; cost: string; by_model: ModelSpend[] };
  key: { id: string; cost: string; by_model: ModelSpend[] } | null;
}

/**
 * The money reads of one member or key (docs/adr/0101-money.md), for whoever shows a caller its own
 * spend (`GET /v1/usage`, the console): this month's cost from the daily rollups the ledger writer
 * keeps (UsageDaily: exact bigint sums of each request's stored cost), and the live state of the
 * budgets from the limits engine (the same counters admissions reserve on). Every read is bounded to
 * the member (and key) it is given: it never returns another member's rows.
 */
@Injectable()
export class SpendService {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(LimitsService) private readonly limits: LimitsService,
  ) {}

  /** The member's spend this month, and the key's when `keyId` is given (a key of that member). */
  async currentMonth(memberId: string, keyId?: string, now = Date.now()): Promise<PeriodSpend> {
    const month = monthWindow(now);
    const from = new Date(month.start).toISOString().slice(0, 10);
    const to = new Date(month.end - 1).toISOString().slice(0, 10);
    const rows = await this.db.$queryRaw<
      { keyId: string; model: string; requests: number; tokens: number; cost: string }[]
    >`SELECT "keyId", "model", sum("requests")::int AS "requests", sum("totalTokens")::float8 AS "tokens",
             sum("cost")::text AS "cost"
        FROM "UsageDaily"
       WHERE "memberId" = ${memberId} AND "day" BETWEEN ${from}::date AND ${to}::date
       GROUP BY 1, 2`;
    const sum = (rs: typeof rows) => {
      const byModel = new Map<string, { requests: number; tokens: number; cost: bigint }>();
      let cost = 0n;
      for (const r of rs) {
        const m = byModel.get(r.model) ?? { requests: 0, tokens: 0, cost: 0n };
        m.requests += r.requests;
        m.tokens += Number(r.tokens);
        m.cost += BigInt(r.cost ?? '0');
        cost += BigInt(r.cost ?? '0');
        byModel.set(r.model, m);
      }
      return {
        cost: formatMoney(cost),
        by_model: [...byModel].map(([model, m]) => ({
          model,
          requests: m.requests,
          total_tokens: m.tokens,
          cost: formatMoney(m.cost),
        })),
      };
    };
    return {
      from: Math.floor(month.start / 1000),
      to: Math.floor(month.end / 1000),
      currency: 'usd',
      member: { id: memberId, ...sum(rows) },
      key: keyId ? { id: keyId, ...sum(rows.filter((r) => r.keyId === keyId)) } : null,
    };
  }

  /**
   * The budgets of a key and its member, now (`unit: nano_usd`; limit, used and remaining in
   * nano-dollars; resets_at the next month): empty when neither has a budget.
   */
  async budgets(subject: LimitSubject): Promise<LimitState[]> {
    const all = await this.limits.state(subject, []);
    return all.filter((l) => l.unit === 'nano_usd');
  }
}
