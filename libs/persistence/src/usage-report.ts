// Reads of the usage ledger for operators and for the gateway's limits: totals for a period, grouped
// by member, key and/or model (admin CLI and GET /admin/usage), and one sum used to rebuild a quota
// counter that Redis lost. Every query is bounded by "createdAt" so that only the months involved
// are scanned (partition pruning), and filtered on indexed columns.

import type { DbClient } from './db.js';
import { InvalidInputError } from './errors.js';
import { PrismaSql } from './sql-tag.js';
import type { SqlRunner } from './usage-partitions.js';

const { empty, join, raw, sql } = PrismaSql;

export type UsageGroupBy = 'member' | 'key' | 'model';

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
}

const COLUMN: Record<UsageGroupBy, { sql: string; field: 'memberId' | 'keyId' | 'model' }> = {
  member: { sql: '"memberId"', field: 'memberId' },
  key: { sql: '"keyId"', field: 'keyId' },
  model: { sql: '"model"', field: 'model' },
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
  const cols = groups.map((g) => raw(`u.${COLUMN[g].sql}`));
  const select = cols.length ? sql`${join(cols)},` : empty;
  const groupBy = cols.length ? sql`GROUP BY ${join(cols)}` : empty;
  const order = cols.length ? sql`, ${join(cols)}` : empty;
  const rows = await db.$queryRaw<Record<string, unknown>[]>`
    SELECT ${select} count(*)::bigint AS "requests",
           COALESCE(sum(u."promptTokens"), 0)::bigint AS "promptTokens",
           COALESCE(sum(u."completionTokens"), 0)::bigint AS "completionTokens",
           COALESCE(sum(u."totalTokens"), 0)::bigint AS "totalTokens",
           count(*) FILTER (WHERE u."batch")::bigint AS "batchRequests",
           COALESCE(round(sum(CASE WHEN u."batch" THEN u."totalTokens" * COALESCE(m."batchPriceFactor", 0.5)
                                   ELSE u."totalTokens" END)), 0)::bigint AS "billableTokens"
      FROM "UsageEvent" u LEFT JOIN "Model" m ON m."id" = u."model"
     WHERE ${join(where, ' AND ')}
     ${groupBy}
     ORDER BY "totalTokens" DESC ${order}`;
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
      };
      for (const g of groups) row[COLUMN[g].field] = String(r[COLUMN[g].field]);
      return row;
    });
}

export interface UsageTotalQuery {
  /** Sum of total tokens, or a count of requests. */
  unit: 'tokens' | 'requests';
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
  const value = q.unit === 'tokens' ? 'COALESCE(sum("totalTokens"), 0)::bigint' : 'count(*)::bigint';
  const { rows } = await db.query<{ n: bigint | string }>(
    `SELECT ${value} AS "n" FROM "UsageEvent" WHERE ${where.join(' AND ')}`,
    values,
  );
  return Number(rows[0]?.n ?? 0);
}
