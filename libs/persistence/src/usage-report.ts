// Reads of the usage ledger for operators and for the gateway's limits: totals for a period, grouped
// by member, key and/or model (admin CLI and GET /admin/usage), and one sum used to rebuild a quota
// counter that Redis lost. Every query is bounded by "createdAt" so that only the months involved
// are scanned (partition pruning), and filtered on indexed columns.

import type { DbClient } from './db.js';
import { InvalidInputError } from './errors.js';
import { PrismaSql } from './sql-tag.js';
import type { SqlRunner } from './usage-partitions.js';

const { empty, join, raw, sql } = PrismaSql;

export type UsageGroupBy = 'member' | 'key' | 'model' | 'day';

export interface UsageReportQuery {
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  memberId?: string;
  keyId?: string;
  model?: string;
  /** Columns to group by, in this order; empty: one total row. */
  groupBy: readonly UsageGroupBy[];
}

export interface UsageReportRow {
  memberId?: string;
  keyId?: string;
  model?: string;
  /** UTC day, YYYY-MM-DD (group `day`). */
  day?: string;
  /** The member's name (group `member`). */
  memberName?: string | null;
  /** The key's name and prefix (group `key`). */
  keyName?: string | null;
  keyPrefix?: string | null;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Requests that were batch lines (/v1/batches). */
  batchRequests: number;
  /**
   * Tokens to bill: interactive tokens count in full, a batch line's at its model's
   * `batch_price_factor` (catalog; 0.5 by default, also for models no longer in the catalog).
   */
  billableTokens: number;
  /**
   * What the rows cost, in nano-dollars (a bigint: an exact sum, ADR 0101), batch lines at their
   * batch price already: the sum of each event's stored cost.
   */
  cost: bigint;
}

const COLUMN: Record<UsageGroupBy, { sql: string; field: 'memberId' | 'keyId' | 'model' | 'day' }> = {
  member: { sql: 'u."memberId"', field: 'memberId' },
  key: { sql: 'u."keyId"', field: 'keyId' },
  model: { sql: 'u."model"', field: 'model' },
  day: { sql: `to_char((u."createdAt" AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')`, field: 'day' },
};

function checkPeriod(from: Date, to: Date): void {
  if (!(from instanceof Date) || !(to instanceof Date) || Number.isNaN(+from) || Number.isNaN(+to))
    throw new InvalidInputError('a usage period needs valid from and to dates');
  if (+from >= +to) throw new InvalidInputError('the usage period must end after it starts');
}

/** Ledger totals in [from, to), grouped as asked, largest total tokens first. */
export async function usageReport(db: DbClient, q: UsageReportQuery): Promise<UsageReportRow[]> {
  checkPeriod(q.from, q.to);
  const groups = [...new Set(q.groupBy)];
  for (const g of groups) if (!COLUMN[g]) throw new InvalidInputError(`cannot group usage by ${g}`);
  const where = [sql`u."createdAt" >= ${q.from} AND u."createdAt" < ${q.to}`];
  if (q.memberId) where.push(sql`u."memberId" = ${q.memberId}`);
  if (q.keyId) where.push(sql`u."keyId" = ${q.keyId}`);
  if (q.model) where.push(sql`u."model" = ${q.model}`);
  const cols = groups.map((g) => raw(`${COLUMN[g].sql} AS "${COLUMN[g].field}"`));
  const keys = groups.map((g) => raw(`"${COLUMN[g].field}"`));
  const select = cols.length ? sql`${join(cols)},` : empty;
  const groupBy = cols.length ? sql`GROUP BY ${join(keys)}` : empty;
  const order = cols.length ? sql`, ${join(keys)}` : empty;
  // Names beside the ids (a member or key deleted since shows its id only).
  const names = groups.includes('member') || groups.includes('key');
  const named = names
    ? sql`SELECT r.*${groups.includes('member') ? sql`, mb."name" AS "memberName"` : empty}${
        groups.includes('key') ? sql`, k."name" AS "keyName", k."prefix" AS "keyPrefix"` : empty
      } FROM r${groups.includes('member') ? sql` LEFT JOIN "Member" mb ON mb."id" = r."memberId"` : empty}${
        groups.includes('key') ? sql` LEFT JOIN "ApiKey" k ON k."id" = r."keyId"` : empty
      } ORDER BY r."totalTokens" DESC${order}`
    : sql`SELECT * FROM r`;
  const rows = await db.$queryRaw<Record<string, unknown>[]>`
    WITH r AS (
    SELECT ${select} count(*)::bigint AS "requests",
           COALESCE(sum(u."promptTokens"), 0)::bigint AS "promptTokens",
           COALESCE(sum(u."completionTokens"), 0)::bigint AS "completionTokens",
           COALESCE(sum(u."totalTokens"), 0)::bigint AS "totalTokens",
           count(*) FILTER (WHERE u."batch")::bigint AS "batchRequests",
           COALESCE(round(sum(CASE WHEN u."batch" THEN u."totalTokens" * COALESCE(m."batchPriceFactor", 0.5)
                                   ELSE u."totalTokens" END)), 0)::bigint AS "billableTokens",
           COALESCE(sum(u."cost"), 0)::text AS "cost"
      FROM "UsageEvent" u LEFT JOIN "Model" m ON m."id" = u."model"
     WHERE ${join(where, ' AND ')}
     ${groupBy}
     ORDER BY "totalTokens" DESC ${order})
    ${named}`;
  return rows
    .filter((r) => groups.length > 0 || Number(r.requests) > 0)
    .map((r) => {
      const row: UsageReportRow = {
        requests: Number(r.requests),
        promptTokens: Number(r.promptTokens),
        completionTokens: Number(r.completionTokens),
        totalTokens: Number(r.totalTokens),
        batchRequests: Number(r.batchRequests),
        billableTokens: Number(r.billableTokens),
        cost: BigInt(String(r.cost ?? '0')),
      };
      for (const g of groups) row[COLUMN[g].field] = String(r[COLUMN[g].field]);
      if (groups.includes('member')) row.memberName = (r.memberName as string | null) ?? null;
      if (groups.includes('key')) {
        row.keyName = (r.keyName as string | null) ?? null;
        row.keyPrefix = (r.keyPrefix as string | null) ?? null;
      }
      return row;
    });
}

export interface UsageTotalQuery {
  /** Sum of total tokens, a count of requests, or the sum of costs (nano-dollars). */
  unit: 'tokens' | 'requests' | 'cost';
  memberId?: string;
  keyId?: string;
  model?: string;
  /** Only these endpoints. */
  endpoints?: readonly string[];
  /** Only endpoints that start with this. */
  endpointPrefix?: string;
  from: Date;
  to: Date;
}

/**
 * One number from the ledger: what a quota counter of the gateway holds, rebuilt. On pg directly (the
 * gateway's limits) or through Prisma's client (`prismaRunner(db)`).
 */
export async function usageTotal(db: SqlRunner, q: UsageTotalQuery): Promise<number> {
  checkPeriod(q.from, q.to);
  const values: unknown[] = [q.from, q.to];
  const param = (v: unknown) => `$${values.push(v)}`;
  const where = ['"createdAt" >= $1 AND "createdAt" < $2'];
  if (q.memberId) where.push(`"memberId" = ${param(q.memberId)}`);
  if (q.keyId) where.push(`"keyId" = ${param(q.keyId)}`);
  if (q.model) where.push(`"model" = ${param(q.model)}`);
  if (q.endpoints) where.push(`"endpoint" = ANY(${param([...q.endpoints])}::text[])`);
  if (q.endpointPrefix) where.push(`starts_with("endpoint", ${param(q.endpointPrefix)})`);
  const value =
    q.unit === 'tokens'
      ? 'COALESCE(sum("totalTokens"), 0)::bigint'
      : q.unit === 'cost'
        ? 'COALESCE(sum("cost"), 0)::bigint'
        : 'count(*)::bigint';
  const { rows } = await db.query<{ n: bigint | string }>(
    `SELECT ${value} AS "n" FROM "UsageEvent" WHERE ${where.join(' AND ')}`,
    values,
  );
  return Number(rows[0]?.n ?? 0);
}
