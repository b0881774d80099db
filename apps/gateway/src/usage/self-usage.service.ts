import {
  type CatalogEntry,
  formatMoney,
  LimitState,
  SelfUsage,
  Tier,
  type UsageTotals,
} from '@infer/contracts';
import type { Db } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { CatalogService } from '../catalog/catalog.service.js';
import { PRISMA } from '../infra/tokens.js';
import { LimitsService } from '../limits/limits.service.js';
import { billingPeriod } from '../limits/periods.js';

const DAY_MS = 86_400_000;

/** Whose usage: a member, and (GET /v1/usage) the key that asks. Ids come from the caller's credential only. */
export interface UsageSubject {
  memberId: string;
  tier: Tier;
  billingAnchor: Date;
  key: {
    id: string;
    name: string;
    prefix: string;
    overrides: Record<string, unknown> | null;
    /** The key's model allow-list (null: every model of the tier). */
    models: ReadonlySet<string> | null;
  } | null;
}

/** Totals while summing: cost in nano-dollars (exact; formatted once at the end). */
type Sum = Omit<UsageTotals, 'cost'> & { nanos: bigint };

const zero = (): Sum => ({ requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, nanos: 0n });

function add(t: Sum, r: Sum): void {
  t.requests += r.requests;
  t.prompt_tokens += r.prompt_tokens;
  t.completion_tokens += r.completion_tokens;
  t.total_tokens += r.total_tokens;
  t.nanos += r.nanos;
}

function totals({ nanos, ...t }: Sum): UsageTotals {
  return { ...t, cost: formatMoney(nanos) };
}

/**
 * The one read behind GET /v1/usage and the account page's usage: a member's (and key's) usage of
 * the current billing period from the daily rollup the ledger writer keeps, and every limit's live
 * state from the limits store (the same counters admission uses). Never takes a member or key id
 * from a request's parameters: the subject is the caller's own credential. Cost is the sum of each
 * request's stored cost (prices at the time of use); the money budgets are limits (unit `nano_usd`).
 */
@Injectable()
export class SelfUsageService {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(LimitsService) private readonly limits: LimitsService,
    @Inject(CatalogService) private readonly catalog: CatalogService,
  ) {}

  async read(subject: UsageSubject): Promise<SelfUsage> {
    const now = this.limits.store.clock();
    const period = billingPeriod(subject.billingAnchor, now);
    const fromDay = new Date(Math.floor(period.start / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
    const toDay = new Date(Math.floor(now / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
    const [rows, limits] = await Promise.all([
      this.db.$queryRaw<
        Array<{
          day: string;
          model: string;
          keyId: string;
          r: number;
          p: number;
          c: number;
          t: number;
          n: string | null;
        }>
      >`SELECT to_char("day", 'YYYY-MM-DD') AS day, "model", "keyId",
               "requests"::int AS r, "promptTokens"::float8 AS p, "completionTokens"::float8 AS c,
               "totalTokens"::float8 AS t, "cost"::text AS n
          FROM "UsageDaily"
         WHERE "memberId" = ${subject.memberId}
           AND "day" BETWEEN ${fromDay}::date AND ${toDay}::date`,
      this.limitStates(subject),
    ]);
    const member = zero();
    const key = zero();
    const byDayModel = new Map<string, Sum & { day: string; model: string }>();
    for (const row of rows) {
      const t = {
        requests: row.r,
        prompt_tokens: row.p,
        completion_tokens: row.c,
        total_tokens: row.t,
        nanos: BigInt(row.n ?? '0'),
      };
      add(member, t);
      if (subject.key && row.keyId === subject.key.id) add(key, t);
      const id = `${row.day} ${row.model}`;
      let d = byDayModel.get(id);
      if (!d) {
        d = { day: row.day, model: row.model, ...zero() };
        byDayModel.set(id, d);
      }
      add(d, t);
    }
    const daily = [...byDayModel.values()]
      .sort((a, b) => (a.day === b.day ? a.model.localeCompare(b.model) : a.day.localeCompare(b.day)))
      .map(({ day, model, ...sum }) => ({ day, model, ...totals(sum) }));
    return {
      object: 'usage',
      at: Math.floor(now / 1000),
      period: { start: Math.floor(period.start / 1000), end: Math.floor(period.end / 1000) },
      currency: 'usd',
      member: { id: subject.memberId, tier: subject.tier, usage: totals(member) },
      key: subject.key
        ? { id: subject.key.id, name: subject.key.name, prefix: subject.key.prefix, usage: totals(key) }
        : null,
      daily,
      limits,
    };
  }

  /** The key's and the member's limits (only the member's when no key asks), or none when limits are off. */
  private async limitStates(subject: UsageSubject): Promise<LimitState[]> {
    if (!this.limits.enabled) return [];
    const snap = this.catalog.current;
    const models = snap
      .listFor(subject.tier, subject.key?.models ?? null)
      .data.map((m) => snap.get(m.id))
      .filter((m): m is CatalogEntry => Boolean(m));
    return this.limits.state(
      {
        // No key: a name no key has, and only the member's own limits are read.
        keyId: subject.key?.id ?? '-',
        memberId: subject.memberId,
        tier: subject.tier,
        billingAnchor: subject.billingAnchor,
        overrides: subject.key?.overrides ?? null,
      },
      models,
      subject.key ? undefined : (l) => l.scope === 'member',
    );
  }
}
