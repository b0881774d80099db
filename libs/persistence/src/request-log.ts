// The request log (docs/adr/0110-request-log.md): "request_log" is PARTITION BY RANGE ("time"), one
// partition a day ("request_log_YYYYMMDD", UTC), created ahead by the ledger writer and dropped whole
// after the retention. Written from the usage events (which carry the log's fields), idempotent by
// request id per day; read by the admin API with keyset paging on (time, request_id), newest first.
import type { UsageEvent } from '@infer/contracts';
import type { DbClient } from './db.js';
import { PrismaSql, type Sql } from './sql-tag.js';

const { join, sql, raw } = PrismaSql;
const DAY_MS = 86_400_000;

/** First instant (UTC) of the day that holds `at`. */
export function dayStart(at: Date | number): Date {
  const t = typeof at === 'number' ? at : at.getTime();
  return new Date(t - (((t % DAY_MS) + DAY_MS) % DAY_MS));
}

/** Partition name of the UTC day holding `at`: request_log_YYYYMMDD. */
export function requestLogPartitionName(at: Date | number): string {
  return `request_log_${dayStart(at).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** Status classes of the log filter: a family (2xx, 4xx, 5xx) or one status (429, 402). */
export type StatusClass = '2xx' | '4xx' | '5xx' | '429' | '402';

export interface RequestLogRow {
  time: Date;
  requestId: string;
  memberId: string;
  keyId: string;
  model: string | null;
  endpoint: string;
  status: number;
  errorCode: string | null;
  limitName: string | null;
  refused: boolean;
  batch: boolean;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  latencyMs: number;
  firstTokenMs: number | null;
  traceId: string | null;
  cost: string | null;
  engineEndpoint: string | null;
}

export interface RequestLogQuery {
  memberId?: string;
  keyId?: string;
  model?: string;
  statusClass?: StatusClass;
  errorCode?: string;
  /** The requests of one trace (W3C trace id). */
  traceId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
  /** Keyset cursor: rows strictly older than (time, requestId). */
  before?: { time: Date; requestId: string };
  limit: number;
}

export interface RefusalSummary {
  limitName: string;
  errorCode: string | null;
  lastHour: number;
  lastDay: number;
  last: Date;
  /** The key of the last refusal (its limit's live state and reset time are that key's). */
  lastKeyId: string;
}

/** A logged request's bodies (request_log_body), when body logging was on for it. */
export interface RequestLogBodyRow {
  time: Date;
  requestId: string;
  memberId: string;
  requestBody: string | null;
  responseBody: string | null;
  requestTruncated: boolean;
  responseTruncated: boolean;
}

export interface RequestLogWriteResult {
  /** Bodies written to request_log_body (events that carried them). */
  bodies?: number;
  inserted: number;
  /** Already logged that day (a redelivery), repeated in the batch, or older than the retention. */
  skipped: number;
}

const COLUMNS = sql`"time", "request_id" AS "requestId", "member_id" AS "memberId", "key_id" AS "keyId",
  "model", "endpoint", "status", "error_code" AS "errorCode", "limit_name" AS "limitName", "refused", "batch",
  "prompt_tokens" AS "promptTokens", "completion_tokens" AS "completionTokens", "total_tokens" AS "totalTokens",
  "latency_ms" AS "latencyMs", "first_token_ms" AS "firstTokenMs", "trace_id" AS "traceId", "cost"::text AS "cost",
  "engine_endpoint" AS "engineEndpoint"`;

/**
 * A status class as SQL literals (never parameters): the failure classes must let the planner prove
 * the partial indexes' `"status" >= 400` (request_log_failure_indexes migration), which it cannot do
 * for a parameter in a generic plan.
 */
function statusCondition(c: StatusClass): Sql {
  switch (c) {
    case '2xx':
      return sql`"status" BETWEEN 200 AND 299`;
    case '4xx':
      return sql`"status" >= 400 AND "status" <= 499`;
    case '5xx':
      return sql`"status" >= 500`;
    case '429':
      return sql`"status" >= 400 AND "status" = 429`;
    case '402':
      return sql`"status" >= 400 AND "status" = 402`;
  }
}

export class RequestLogRepository {
  /** Partitions known to exist (created or seen by this repository). */
  private readonly ensured = new Set<string>();

  constructor(private readonly db: DbClient) {}

  /**
   * Creates (if missing) the daily partitions holding these instants. Serialised by an advisory lock
   * (two writers creating the same day), idempotent (CREATE TABLE IF NOT EXISTS).
   */
  async ensurePartitions(instants: readonly (Date | number)[]): Promise<string[]> {
    const made: string[] = [];
    for (const at of instants) {
      const name = requestLogPartitionName(at);
      if (this.ensured.has(name)) continue;
      const from = dayStart(at);
      const to = new Date(from.getTime() + DAY_MS);
      await this.db.$executeRawUnsafe(
        `DO $$ BEGIN
           PERFORM pg_advisory_xact_lock(hashtext('request_log_partition'));
           CREATE TABLE IF NOT EXISTS "${name}" PARTITION OF "request_log"
             FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}');
         END $$`,
      );
      this.ensured.add(name);
      made.push(name);
    }
    return made;
  }

  /**
   * Writes the log records of a batch of usage events once each: idempotent by request id per UTC day
   * (a redelivered event, or the same request published again that day, is skipped). Events older than
   * `retentionDays` are skipped (their day's partition is gone, or about to be).
   */
  async insertBatch(
    events: readonly UsageEvent[],
    opts: { retentionDays: number; bodyRetentionDays?: number; now?: number },
  ): Promise<RequestLogWriteResult> {
    const bodies = await this.insertBodies(events, opts.bodyRetentionDays ?? 3, opts.now);
    const cutoff = dayStart((opts.now ?? Date.now()) - (opts.retentionDays - 1) * DAY_MS).getTime();
    const unique = new Map<string, UsageEvent>();
    for (const e of events) if (e.at >= cutoff && !unique.has(e.requestId)) unique.set(e.requestId, e);
    const batch = [...unique.values()];
    if (!batch.length) return { inserted: 0, skipped: events.length };
    await this.ensurePartitions(batch.map((e) => e.at));
    const rows = await this.db.$queryRaw<{ inserted: number }[]>`
      WITH ins AS (
        INSERT INTO "request_log" ("time", "request_id", "member_id", "key_id", "model", "endpoint", "status",
                                   "error_code", "limit_name", "refused", "batch", "prompt_tokens",
                                   "completion_tokens", "total_tokens", "latency_ms", "first_token_ms", "trace_id", "cost")
        SELECT v."time", v."request_id", v."member_id", v."key_id", v."model", v."endpoint", v."status",
               v."error_code", v."limit_name", v."refused", v."batch", v."prompt_tokens", v."completion_tokens",
               v."total_tokens", v."latency_ms", v."first_token_ms", v."trace_id",
               -- nano-dollars -> dollars (the column keeps 8 decimals: rounded half up)
               CASE WHEN v."refused" THEN NULL ELSE round(v."cost"::numeric / 1000000000, 8) END
          FROM unnest(
            ${batch.map((e) => new Date(e.at).toISOString())}::timestamptz[],
            ${batch.map((e) => e.requestId)}::text[], ${batch.map((e) => e.memberId)}::text[],
            ${batch.map((e) => e.keyId)}::text[], ${batch.map((e) => e.model || null)}::text[],
            ${batch.map((e) => e.endpoint)}::text[], ${batch.map((e) => e.status)}::int[],
            ${batch.map((e) => e.errorCode ?? null)}::text[], ${batch.map((e) => e.limit ?? null)}::text[],
            ${batch.map((e) => e.refused === true)}::boolean[], ${batch.map((e) => e.batch === true)}::boolean[],
            ${batch.map((e) => e.promptTokens)}::int[], ${batch.map((e) => e.completionTokens)}::int[],
            ${batch.map((e) => e.totalTokens)}::int[], ${batch.map((e) => e.latencyMs)}::int[],
            ${batch.map((e) => e.firstTokenMs ?? null)}::int[], ${batch.map((e) => e.traceId ?? null)}::text[],
            ${batch.map((e) => e.cost ?? 0)}::bigint[]
          ) AS v("time", "request_id", "member_id", "key_id", "model", "endpoint", "status", "error_code",
                 "limit_name", "refused", "batch", "prompt_tokens", "completion_tokens", "total_tokens",
                 "latency_ms", "first_token_ms", "trace_id", "cost")
         WHERE NOT EXISTS (
           SELECT 1 FROM "request_log" r
            WHERE r."request_id" = v."request_id"
              AND r."time" >= date_trunc('day', v."time", 'UTC')
              AND r."time" < date_trunc('day', v."time", 'UTC') + interval '1 day')
        ON CONFLICT DO NOTHING
        RETURNING 1
      )
      SELECT count(*)::int AS "inserted" FROM ins`;
    const inserted = rows[0]?.inserted ?? 0;
    return { inserted, skipped: events.length - inserted, ...(bodies ? { bodies } : {}) };
  }

  /**
   * The bodies the events carry (body logging on for their member or model), beside their log rows:
   * idempotent by (request id, time); none older than the bodies' retention.
   */
  private async insertBodies(events: readonly UsageEvent[], retentionDays: number, now = Date.now()) {
    const cutoff = now - retentionDays * DAY_MS;
    const withBodies = events.filter((e) => e.bodies && e.at >= cutoff);
    if (!withBodies.length) return 0;
    const rows = await this.db.$queryRaw<{ inserted: number }[]>`
      WITH ins AS (
        INSERT INTO "request_log_body" ("time", "request_id", "member_id", "request_body", "response_body",
                                        "request_truncated", "response_truncated")
        SELECT * FROM unnest(
          ${withBodies.map((e) => new Date(e.at).toISOString())}::timestamptz[],
          ${withBodies.map((e) => e.requestId)}::text[], ${withBodies.map((e) => e.memberId)}::text[],
          ${withBodies.map((e) => e.bodies?.request ?? null)}::text[],
          ${withBodies.map((e) => e.bodies?.response ?? null)}::text[],
          ${withBodies.map((e) => e.bodies?.requestTruncated === true)}::boolean[],
          ${withBodies.map((e) => e.bodies?.responseTruncated === true)}::boolean[])
        ON CONFLICT DO NOTHING
        RETURNING 1
      )
      SELECT count(*)::int AS "inserted" FROM ins`;
    return rows[0]?.inserted ?? 0;
  }

  /**
   * Deletes the bodies older than their retention (REQUEST_LOG_BODY_RETENTION_DAYS, counted in days
   * back from now: shorter than the log's, whose rows stay). Returns how many were deleted.
   */
  async dropExpiredBodies(retentionDays: number, now = Date.now()): Promise<number> {
    return this.db
      .$executeRaw`DELETE FROM "request_log_body" WHERE "time" < ${new Date(now - retentionDays * DAY_MS)}`;
  }

  /** The bodies of one request (logged at `time`), or null when none were logged or they expired. */
  async bodiesOf(requestId: string, time: Date): Promise<RequestLogBodyRow | null> {
    const rows = await this.db.$queryRaw<RequestLogBodyRow[]>`
      SELECT "time", "request_id" AS "requestId", "member_id" AS "memberId", "request_body" AS "requestBody",
             "response_body" AS "responseBody", "request_truncated" AS "requestTruncated",
             "response_truncated" AS "responseTruncated"
        FROM "request_log_body" WHERE "request_id" = ${requestId} AND "time" = ${time}`;
    return rows[0] ?? null;
  }

  /**
   * Drops the partitions of days wholly outside the retention (the last `retentionDays` UTC days,
   * today included, are kept). Returns the dropped partitions' names.
   */
  async dropExpired(retentionDays: number, now = Date.now()): Promise<string[]> {
    const keepFrom = requestLogPartitionName(now - (retentionDays - 1) * DAY_MS);
    const parts = await this.db.$queryRaw<{ name: string }[]>`
      SELECT c.relname AS "name" FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = '"request_log"'::regclass ORDER BY 1`;
    const dropped: string[] = [];
    for (const { name } of parts) {
      // Names sort as their days do (request_log_YYYYMMDD).
      if (!/^request_log_\d{8}$/.test(name) || name >= keepFrom) continue;
      await this.db.$executeRawUnsafe(`DROP TABLE IF EXISTS "${name}"`);
      this.ensured.delete(name);
      dropped.push(name);
    }
    return dropped;
  }

  /** Rows matching the filters, newest first (keyset on time, request id). */
  async list(q: RequestLogQuery): Promise<RequestLogRow[]> {
    const where: Sql[] = [];
    if (q.memberId) where.push(sql`"member_id" = ${q.memberId}`);
    if (q.keyId) where.push(sql`"key_id" = ${q.keyId}`);
    if (q.model) where.push(sql`"model" = ${q.model}`);
    if (q.statusClass) where.push(statusCondition(q.statusClass));
    // Only failures carry a code: said as a literal, the failure indexes serve the filter.
    if (q.errorCode) where.push(sql`"status" >= 400 AND "error_code" = ${q.errorCode}`);
    if (q.traceId) where.push(sql`"trace_id" = ${q.traceId}`);
    if (q.from) where.push(sql`"time" >= ${q.from}`);
    if (q.to) where.push(sql`"time" < ${q.to}`);
    if (q.before) where.push(sql`("time", "request_id") < (${q.before.time}, ${q.before.requestId})`);
    return this.db.$queryRaw<RequestLogRow[]>`
      SELECT ${COLUMNS} FROM "request_log"
       ${where.length ? sql`WHERE ${join(where, ' AND ')}` : raw('')}
       ORDER BY "time" DESC, "request_id" DESC LIMIT ${q.limit}`;
  }

  /** The log rows of one request id (one, unless the id was reused on another day), newest first. */
  async byRequestId(requestId: string): Promise<RequestLogRow[]> {
    return this.db.$queryRaw<RequestLogRow[]>`
      SELECT ${COLUMNS} FROM "request_log" WHERE "request_id" = ${requestId}
       ORDER BY "time" DESC LIMIT 10`;
  }

  /** Why a member is refused: per limit (and code), refusals in the last hour and day, and the last one. */
  async refusals(memberId: string, now = Date.now()): Promise<RefusalSummary[]> {
    const hourAgo = new Date(now - 3_600_000);
    const dayAgo = new Date(now - DAY_MS);
    const rows = await this.db.$queryRaw<
      RefusalSummary[]
    >`SELECT "limit_name" AS "limitName", "error_code" AS "errorCode",
             count(*) FILTER (WHERE "time" >= ${hourAgo})::int AS "lastHour", count(*)::int AS "lastDay",
             max("time") AS "last", (array_agg("key_id" ORDER BY "time" DESC))[1] AS "lastKeyId"
        FROM "request_log"
       WHERE "member_id" = ${memberId} AND "time" >= ${dayAgo} AND "limit_name" IS NOT NULL
       GROUP BY 1, 2 ORDER BY "last" DESC`;
    return rows;
  }
}
