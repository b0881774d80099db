import { type UsageEvent, UsageEventSchema } from '@infer/contracts';
import type { Db } from './db.js';
import { InvalidInputError } from './errors.js';
import { PrismaSql } from './sql-tag.js';
import { monthStart, usagePartitionName } from './usage-partitions.js';

const { join, sql } = PrismaSql;

export type { UsageEvent };

export interface InsertBatchResult {
  /** Events written now. */
  inserted: number;
  /** Events skipped because their requestId is already in the ledger (or repeated in the batch). */
  duplicates: number;
}

export interface UsageQuery {
  memberId?: string;
  keyId?: string;
  model?: string;
  /** Inclusive start. */
  from: Date;
  /** Exclusive end. */
  to: Date;
}

export interface UsageTotals {
  requests: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface UsageSummary extends UsageTotals {
  from: Date;
  to: Date;
  byModel: ({ model: string } & UsageTotals)[];
}

/**
 * How far around an event's own time a repeated requestId is looked for. The primary key is
 * (requestId, createdAt) and createdAt is the event's own `at`, so a re-delivered event collides on
 * the key; this window also catches the same request re-published with a different timestamp.
 */
const DEDUP_WINDOW = '1 day';

export class UsageRepository {
  private readonly ensuredMonths = new Set<string>();

  constructor(private readonly db: Db) {}

  /**
   * Writes a batch of usage events once each: idempotent by requestId (INSERT ... ON CONFLICT DO
   * NOTHING on (requestId, createdAt), createdAt being the event's `at`). Creates the monthly
   * partitions the batch needs first. Returns how many were new.
   */
  async insertBatch(events: readonly UsageEvent[]): Promise<InsertBatchResult> {
    if (!events.length) return { inserted: 0, duplicates: 0 };
    const unique = new Map<string, UsageEvent>();
    for (const raw of events) {
      const parsed = UsageEventSchema.safeParse(raw);
      if (!parsed.success) {
        throw new InvalidInputError(
          `invalid usage event ${String((raw as { requestId?: unknown })?.requestId)}: ${parsed.error.message}`,
        );
      }
      // One row per request: the gateway's event when the batch holds it and the service's as well.
      const seen = unique.get(parsed.data.requestId);
      if (!seen || (seen.source === 'service' && parsed.data.source !== 'service'))
        unique.set(parsed.data.requestId, parsed.data);
    }
    const batch = [...unique.values()];
    await this.ensurePartitions(batch.map((e) => new Date(e.at)));
    // One statement: the ledger rows, and the daily / hourly rollups of exactly the rows inserted
    // (a duplicate skipped by the ledger is not counted twice), so the rollups never drift.
    const rows = await this.db.$queryRaw<{ inserted: number }[]>`
      WITH ins AS (
        INSERT INTO "UsageEvent" ("requestId", "memberId", "keyId", "model", "endpoint", "promptTokens",
                                  "completionTokens", "totalTokens", "status", "latencyMs", "createdAt", "batch", "cost")
        SELECT v.* FROM unnest(
            ${batch.map((e) => e.requestId)}::text[], ${batch.map((e) => e.memberId)}::text[],
            ${batch.map((e) => e.keyId)}::text[], ${batch.map((e) => e.model)}::text[],
            ${batch.map((e) => e.endpoint)}::text[], ${batch.map((e) => e.promptTokens)}::int[],
            ${batch.map((e) => e.completionTokens)}::int[], ${batch.map((e) => e.totalTokens)}::int[],
            ${batch.map((e) => e.status)}::int[], ${batch.map((e) => e.latencyMs)}::int[],
            ${batch.map((e) => new Date(e.at).toISOString())}::timestamptz[],
            ${batch.map((e) => e.batch === true)}::boolean[], ${batch.map((e) => e.cost ?? 0)}::bigint[]
          ) AS v("requestId", "memberId", "keyId", "model", "endpoint", "promptTokens", "completionTokens",
                 "totalTokens", "status", "latencyMs", "createdAt", "batch", "cost")
         WHERE NOT EXISTS (
           SELECT 1 FROM "UsageEvent" u
            WHERE u."requestId" = v."requestId"
              AND u."createdAt" BETWEEN v."createdAt" - ${DEDUP_WINDOW}::interval AND v."createdAt" + ${DEDUP_WINDOW}::interval)
        ON CONFLICT DO NOTHING
        RETURNING "memberId", "keyId", "model", "promptTokens", "completionTokens", "totalTokens", "status",
                  "latencyMs", "createdAt", "cost"
      ), daily AS (
        INSERT INTO "UsageDaily" AS d ("day", "memberId", "keyId", "model", "requests", "errors", "promptTokens",
                                       "completionTokens", "totalTokens", "cost")
        SELECT ("createdAt" AT TIME ZONE 'UTC')::date, "memberId", "keyId", "model", count(*),
               count(*) FILTER (WHERE "status" >= 400), sum("promptTokens"), sum("completionTokens"),
               sum("totalTokens"), sum("cost")
          FROM ins GROUP BY 1, 2, 3, 4
        ON CONFLICT ("day", "memberId", "keyId", "model") DO UPDATE SET
          "requests" = d."requests" + excluded."requests", "errors" = d."errors" + excluded."errors",
          "promptTokens" = d."promptTokens" + excluded."promptTokens",
          "completionTokens" = d."completionTokens" + excluded."completionTokens",
          "totalTokens" = d."totalTokens" + excluded."totalTokens", "cost" = d."cost" + excluded."cost"
        RETURNING 1
      ), members AS (
        INSERT INTO "UsageDailyMember" AS dm ("day", "memberId", "requests", "errors", "promptTokens",
                                              "completionTokens", "totalTokens", "cost")
        SELECT ("createdAt" AT TIME ZONE 'UTC')::date, "memberId", count(*), count(*) FILTER (WHERE "status" >= 400),
               sum("promptTokens"), sum("completionTokens"), sum("totalTokens"), sum("cost")
          FROM ins GROUP BY 1, 2
        ON CONFLICT ("day", "memberId") DO UPDATE SET
          "requests" = dm."requests" + excluded."requests", "errors" = dm."errors" + excluded."errors",
          "promptTokens" = dm."promptTokens" + excluded."promptTokens",
          "completionTokens" = dm."completionTokens" + excluded."completionTokens",
          "totalTokens" = dm."totalTokens" + excluded."totalTokens", "cost" = dm."cost" + excluded."cost"
        RETURNING 1
      ), monthly AS (
        INSERT INTO "UsageMonthlyMember" AS wm ("month", "memberId", "requests", "totalTokens", "cost")
        SELECT date_trunc('month', "createdAt", 'UTC')::date, "memberId", count(*), sum("totalTokens"), sum("cost")
          FROM ins GROUP BY 1, 2
        ON CONFLICT ("month", "memberId") DO UPDATE SET
          "requests" = wm."requests" + excluded."requests", "totalTokens" = wm."totalTokens" + excluded."totalTokens",
          "cost" = wm."cost" + excluded."cost"
        RETURNING 1
      ), hourly AS (
        INSERT INTO "UsageHourlyModel" AS h ("hour", "model", "requests", "errors", "promptTokens",
                                             "completionTokens", "totalTokens", "latencyMsSum", "cost")
        SELECT date_trunc('hour', "createdAt", 'UTC'), "model", count(*), count(*) FILTER (WHERE "status" >= 400),
               sum("promptTokens"), sum("completionTokens"), sum("totalTokens"), sum("latencyMs"), sum("cost")
          FROM ins GROUP BY 1, 2
        ON CONFLICT ("hour", "model") DO UPDATE SET
          "requests" = h."requests" + excluded."requests", "errors" = h."errors" + excluded."errors",
          "promptTokens" = h."promptTokens" + excluded."promptTokens",
          "completionTokens" = h."completionTokens" + excluded."completionTokens",
          "totalTokens" = h."totalTokens" + excluded."totalTokens",
          "latencyMsSum" = h."latencyMsSum" + excluded."latencyMsSum", "cost" = h."cost" + excluded."cost"
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM ins)::int AS "inserted",
             (SELECT count(*) FROM daily)::int AS "daily", (SELECT count(*) FROM members)::int AS "members",
             (SELECT count(*) FROM monthly)::int AS "monthly",
             (SELECT count(*) FROM hourly)::int AS "hourly"`;
    const inserted = rows[0]?.inserted ?? 0;
    return { inserted, duplicates: events.length - inserted };
  }

  /** Makes sure the monthly partitions holding these instants exist (cached per repository). */
  async ensurePartitions(instants: readonly Date[]): Promise<string[]> {
    const names: string[] = [];
    for (const at of instants) {
      const name = usagePartitionName(at);
      if (this.ensuredMonths.has(name)) continue;
      await this.db
        .$queryRaw`SELECT usage_event_ensure_partition(${monthStart(at).toISOString()}::timestamptz)`;
      this.ensuredMonths.add(name);
      names.push(name);
    }
    return names;
  }

  /** Token and request totals in [from, to), optionally for one member / key / model, per model. */
  async summary(query: UsageQuery): Promise<UsageSummary> {
    if (
      !(query.from instanceof Date) ||
      !(query.to instanceof Date) ||
      Number.isNaN(query.from.getTime()) ||
      Number.isNaN(query.to.getTime())
    ) {
      throw new InvalidInputError('usage summary needs valid from and to dates');
    }
    const conditions = [sql`"createdAt" >= ${query.from} AND "createdAt" < ${query.to}`];
    if (query.memberId) conditions.push(sql`"memberId" = ${query.memberId}`);
    if (query.keyId) conditions.push(sql`"keyId" = ${query.keyId}`);
    if (query.model) conditions.push(sql`"model" = ${query.model}`);
    const rows = await this.db.$queryRaw<
      {
        model: string;
        requests: bigint;
        promptTokens: bigint;
        completionTokens: bigint;
        totalTokens: bigint;
      }[]
    >`SELECT "model", count(*) AS "requests", sum("promptTokens") AS "promptTokens",
             sum("completionTokens") AS "completionTokens", sum("totalTokens") AS "totalTokens"
        FROM "UsageEvent"
       WHERE ${join(conditions, ' AND ')}
       GROUP BY "model" ORDER BY "model"`;
    const byModel = rows.map((r) => ({
      model: r.model,
      requests: Number(r.requests),
      promptTokens: Number(r.promptTokens),
      completionTokens: Number(r.completionTokens),
      totalTokens: Number(r.totalTokens),
    }));
    const total = (k: keyof UsageTotals) => byModel.reduce((n, r) => n + r[k], 0);
    return {
      from: query.from,
      to: query.to,
      requests: total('requests'),
      promptTokens: total('promptTokens'),
      completionTokens: total('completionTokens'),
      totalTokens: total('totalTokens'),
      byModel,
    };
  }
}
