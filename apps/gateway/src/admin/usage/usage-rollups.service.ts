import {
  ApiError,
  type DailyUsage,
  DailyUsageQuerySchema,
  formatMoney,
  type HourlyUsage,
  HourlyUsageQuerySchema,
  parseOrThrow,
} from '@infer/contracts';
import { type Db, PrismaSql, type Sql } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { PRISMA } from '../../infra/tokens.js';

/** Longest range of one daily query (server-enforced). */
export const MAX_DAYS = 366;
const DAY_MS = 86_400_000;

const GROUP_COLUMN = {
  model: PrismaSql.sql`"model"`,
  member: PrismaSql.sql`"memberId"`,
  key: PrismaSql.sql`"keyId"`,
} as const;
const GROUP_FIELD = { model: 'model', member: 'member_id', key: 'key_id' } as const;

/**
 * The work behind UsageRollupsController (usage-rollups.controller.ts).
 *
 * Usage charts from the rollups the ledger writer keeps (UsageDaily, UsageHourlyModel), never from
 * the raw ledger, so they stay fast at any ledger size.
 *   GET /admin/usage/daily?from=YYYY-MM-DD&to=YYYY-MM-DD&member=&key=&model=&group_by=model|member|key|none&top=50
 *   GET /admin/usage/hourly?hours=24    platform-wide, per model and hour
 */

/** One day (and group) of a rollup query: requests, errors, prompt/completion/total tokens, cost in nano-dollars as text. */
interface RollupRow {
  day: string;
  g: string | null;
  r: number;
  e: number;
  p: number;
  c: number;
  t: number;
  m: string | null;
}
@Injectable()
export class UsageRollupsService {
  constructor(@Inject(PRISMA) private readonly db: Db) {}

  async daily(query: unknown): Promise<DailyUsage> {
    const q = parseOrThrow(DailyUsageQuerySchema, query ?? {});
    const to = q.to ? Date.parse(`${q.to}T00:00:00Z`) : Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const from = q.from ? Date.parse(`${q.from}T00:00:00Z`) : to - 29 * DAY_MS;
    if (Number.isNaN(from) || Number.isNaN(to))
      throw ApiError.invalid('`from` and `to` must be real days.', 'from');
    if (from > to) throw ApiError.invalid('`to` must not be before `from`.', 'to');
    if ((to - from) / DAY_MS + 1 > MAX_DAYS)
      throw ApiError.invalid(`At most ${MAX_DAYS} days per query.`, 'from');
    const fromDay = new Date(from).toISOString().slice(0, 10);
    const toDay = new Date(to).toISOString().slice(0, 10);
    const where = [PrismaSql.sql`"day" BETWEEN ${fromDay}::date AND ${toDay}::date`];
    if (q.member) where.push(PrismaSql.sql`"memberId" = ${q.member}`);
    if (q.key) where.push(PrismaSql.sql`"keyId" = ${q.key}`);
    if (q.model) where.push(PrismaSql.sql`"model" = ${q.model}`);
    const group = q.group_by === 'none' ? null : GROUP_COLUMN[q.group_by];
    if (!q.member && !q.key && (q.group_by === 'model' || q.group_by === 'none')) {
      // Platform-wide per model: the hourly per-model rollup holds the same totals in far fewer rows.
      const rows = await this.db.$queryRaw<
        RollupRow[]
      >`SELECT to_char(("hour" AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day,
               ${q.group_by === 'model' ? PrismaSql.sql`"model"` : PrismaSql.sql`NULL`}::text AS g,
               sum("requests")::int AS r, sum("errors")::int AS e, sum("promptTokens")::float8 AS p,
               sum("completionTokens")::float8 AS c, sum("totalTokens")::float8 AS t, sum("cost")::text AS m
          FROM "UsageHourlyModel"
         WHERE "hour" >= ${new Date(from)} AND "hour" < ${new Date(to + DAY_MS)}
               ${q.model ? PrismaSql.sql`AND "model" = ${q.model}` : PrismaSql.empty}
         GROUP BY 1, 2 ORDER BY 1, 2`;
      return this.answer(fromDay, toDay, q.group_by, rows);
    }
    if (!q.key && !q.model && (q.group_by === 'member' || (q.member && q.group_by === 'none'))) {
      // Per member over all keys and models: the per-member daily rollup (one row per member and day).
      const memberCond = PrismaSql.join(
        [
          PrismaSql.sql`"day" BETWEEN ${fromDay}::date AND ${toDay}::date`,
          ...(q.member ? [PrismaSql.sql`"memberId" = ${q.member}`] : []),
        ],
        ' AND ',
      );
      const g = q.group_by === 'member' ? PrismaSql.sql`"memberId"` : PrismaSql.sql`NULL`;
      // Ranking every member without reading every member's every day (the monthly rollup bounds
      // each member's total over the range from above, in 1-2 rows per member for 30 days):
      //  1. `ub`: per member, the tokens of the months the range touches (>= the range's total);
      //  2. exact totals (index-only, from the daily rollup) of the 4 x top members with most `ub`;
      //     the top-th largest of these is a `bar` no top member can be below;
      //  3. exact totals of every member whose `ub` reaches the bar, and the top of those.
      // Exact whatever the data (a flat distribution only makes step 3 larger). Sums in float8:
      // exact below 2^53 tokens and far cheaper than numeric (what sum(bigint) gives).
      const daySum = (m: Sql) => PrismaSql.sql`(SELECT sum(d."totalTokens"::float8) FROM "UsageDailyMember" d
          WHERE d."memberId" = ${m} AND d."day" BETWEEN ${fromDay}::date AND ${toDay}::date)`;
      const ranked = q.member
        ? PrismaSql.sql`SELECT "memberId" FROM "UsageDailyMember" WHERE ${memberCond} GROUP BY 1`
        : PrismaSql.sql`WITH ub AS MATERIALIZED (
              SELECT "memberId", sum("totalTokens"::float8) AS u FROM "UsageMonthlyMember"
               WHERE "month" BETWEEN date_trunc('month', ${fromDay}::date)::date AND ${toDay}::date
               GROUP BY 1),
            guessed AS MATERIALIZED (
              SELECT ${daySum(PrismaSql.sql`g."memberId"`)} AS t
                FROM (SELECT "memberId" FROM ub ORDER BY u DESC LIMIT ${q.top * 4}) g),
            bar AS MATERIALIZED (
              SELECT CASE WHEN count(*) < ${q.top} THEN 0 ELSE min(t) END AS t
                FROM (SELECT t FROM guessed WHERE t IS NOT NULL ORDER BY t DESC LIMIT ${q.top}) x),
            exact AS MATERIALIZED (
              SELECT n."memberId", ${daySum(PrismaSql.sql`n."memberId"`)} AS t
                FROM ub n WHERE n.u >= (SELECT t FROM bar))
            SELECT "memberId" FROM exact WHERE t IS NOT NULL ORDER BY t DESC, 1 LIMIT ${q.top}`;
      const rows = await this.db.$queryRaw<RollupRow[]>`WITH top AS (${ranked})
        SELECT to_char("day", 'YYYY-MM-DD') AS day, ${g}::text AS g, sum("requests")::int AS r,
               sum("errors")::int AS e, sum("promptTokens")::float8 AS p, sum("completionTokens")::float8 AS c,
               sum("totalTokens")::float8 AS t, sum("cost")::text AS m
          FROM "UsageDailyMember" WHERE ${memberCond} AND "memberId" IN (SELECT "memberId" FROM top)
         GROUP BY 1, 2 ORDER BY 1, 2`;
      return this.answer(fromDay, toDay, q.group_by, rows);
    }
    const cond = PrismaSql.join(where, ' AND ');
    // Grouped: only the `top` groups by tokens over the range, so a chart of all members stays small.
    const rows = await this.db.$queryRaw<RollupRow[]>`WITH top AS (
        SELECT ${group ?? PrismaSql.sql`NULL`}::text AS g FROM "UsageDaily" WHERE ${cond}
         GROUP BY 1 ORDER BY sum("totalTokens") DESC, 1 LIMIT ${group ? q.top : 1})
      SELECT to_char("day", 'YYYY-MM-DD') AS day, ${group ?? PrismaSql.sql`NULL`}::text AS g,
             sum("requests")::int AS r, sum("errors")::int AS e, sum("promptTokens")::float8 AS p,
             sum("completionTokens")::float8 AS c, sum("totalTokens")::float8 AS t, sum("cost")::text AS m
        FROM "UsageDaily"
       WHERE ${cond}${group ? PrismaSql.sql` AND ${group} IN (SELECT g FROM top)` : PrismaSql.empty}
       GROUP BY 1, 2 ORDER BY 1, 2`;
    return this.answer(fromDay, toDay, q.group_by, rows);
  }

  private async answer(
    fromDay: string,
    toDay: string,
    groupBy: 'model' | 'member' | 'key' | 'none',
    rows: RollupRow[],
  ): Promise<DailyUsage> {
    const names = await this.names(groupBy, [...new Set(rows.map((r) => r.g).filter((g) => g !== null))]);
    return {
      object: 'usage.daily',
      from: fromDay,
      to: toDay,
      data: rows.map((r) => ({
        day: r.day,
        ...(groupBy !== 'none' && r.g !== null ? { [GROUP_FIELD[groupBy]]: r.g } : {}),
        requests: r.r,
        errors: r.e,
        prompt_tokens: Number(r.p),
        completion_tokens: Number(r.c),
        total_tokens: Number(r.t),
        cost: formatMoney(BigInt(r.m ?? '0')),
        ...(names.get(r.g ?? '') ?? {}),
      })),
    };
  }

  /** The names of the members or keys of a report's rows (one query; ids of deleted ones stay bare). */
  private async names(
    groupBy: 'model' | 'member' | 'key' | 'none',
    ids: string[],
  ): Promise<Map<string, Record<string, string | null>>> {
    const out = new Map<string, Record<string, string | null>>();
    if (!ids.length || (groupBy !== 'member' && groupBy !== 'key')) return out;
    if (groupBy === 'member') {
      const rows = await this.db.$queryRaw<{ id: string; name: string }[]>`
        SELECT "id", "name" FROM "Member" WHERE "id" = ANY(${ids}::text[])`;
      for (const r of rows) out.set(r.id, { member_name: r.name });
    } else {
      const rows = await this.db.$queryRaw<{ id: string; name: string; prefix: string }[]>`
        SELECT "id", "name", "prefix" FROM "ApiKey" WHERE "id" = ANY(${ids}::text[])`;
      for (const r of rows) out.set(r.id, { key_name: r.name, key_prefix: r.prefix });
    }
    return out;
  }

  async hourly(query: unknown): Promise<HourlyUsage> {
    const { hours } = parseOrThrow(HourlyUsageQuerySchema, query ?? {});
    const since = new Date(Math.floor(Date.now() / 3_600_000 - (hours - 1)) * 3_600_000);
    const rows = await this.db.$queryRaw<
      Array<{ hour: Date; model: string; requests: number; errors: number; t: number; l: number }>
    >`SELECT "hour", "model", "requests", "errors", "totalTokens"::float8 AS t, "latencyMsSum"::float8 AS l
        FROM "UsageHourlyModel" WHERE "hour" >= ${since} ORDER BY "hour", "model"`;
    return {
      object: 'usage.hourly',
      data: rows.map((r) => ({
        hour: Math.floor(+r.hour / 1000),
        model: r.model,
        requests: r.requests,
        errors: r.errors,
        total_tokens: Number(r.t),
        avg_latency_ms: r.requests ? Math.round((Number(r.l) / r.requests) * 10) / 10 : 0,
      })),
    };
  }
}
