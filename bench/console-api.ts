/**
 * The operator console's API at scale: seeds a fresh database with BENCH_MEMBERS members (10,000),
 * BENCH_KEYS keys (50,000) and BENCH_USAGE_ROWS ledger rows (5,000,000, spread over 60 days, skewed
 * towards a few heavy keys like real traffic), builds the rollups the ledger writer keeps, starts a
 * gateway, signs in as an operator and times every console call (sequential, after a warm-up).
 * The keys, quotas and overview calls of the live console (issue 11 part B) are timed the same way.
 * Baseline in the same run: the same usage questions answered from the raw ledger (GET /admin/usage),
 * which is what the rollups replace.
 *
 *   node --conditions=source --import ./tools/ts-register.js bench/console-api.ts
 *   BENCH_USAGE_ROWS=500000 BENCH_SAMPLES=20 node ... bench/console-api.ts   (a quicker run)
 *   BENCH_DB=infer_bench_console node ... bench/console-api.ts   (keeps that database: the first run
 *     seeds it, later runs migrate it and only time the calls; drop it by hand when done)
 */
import { performance } from 'node:perf_hooks';
import { startGateway } from '@infer/gateway/public';
import { OperatorsRepository, RequestLogRepository } from '@infer/persistence';
import { type BenchDatabase, createBenchDatabase, pct } from './support.js';

const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 10_000);
const KEYS = Number(process.env.BENCH_KEYS ?? 50_000);
const ROWS = Number(process.env.BENCH_USAGE_ROWS ?? 5_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 40);
const CHUNK = 500_000;
const DAY = 86_400_000;

const t0 = performance.now();
const log = (msg: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1)} s] ${msg}`);

async function main() {
  const db = await createBenchDatabase(process.env.BENCH_DB || undefined);
  try {
    const [seeded] = (await db.prisma.$queryRawUnsafe(
      `SELECT (SELECT count(*) FROM "Member" WHERE "id" LIKE 'bm-%')::int AS members`,
    )) as Array<{ members: number }>;
    if (!seeded?.members) await seed(db);
    else log(`reusing ${db.databaseUrl} (already seeded)`);

    await new OperatorsRepository(db.prisma)
      .create({ email: 'bench@example.com', role: 'owner', password: 'bench password 123' })
      .catch(() => undefined); // a kept database has it already
    const gw = await startGateway({
      ...process.env,
      DATABASE_URL: db.databaseUrl,
      HOST: '127.0.0.1',
      PORT: '0',
      ALLOW_INSECURE_HTTP: '1',
      LOG_LEVEL: 'silent',
      LIMITS_ENABLED: '0',
      MODEL_SUBJECT_PREFIX: 'bench-console.',
    });
    try {
      const login = await fetch(`${gw.url}/admin/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bench@example.com', password: 'bench password 123' }),
      });
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
      await login.json();
      const get = async (path: string) => {
        const res = await fetch(`${gw.url}${path}`, { headers: { cookie } });
        const body = await res.text();
        if (!res.ok) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
        return body;
      };
      const page2 = JSON.parse(await get('/admin/members?limit=25')).next_after as string;
      const keysPage2 = JSON.parse(await get('/admin/keys?limit=25')).next_after as string;
      const heavyMember = 'bm-000001';
      const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
      const today = Date.now();
      const from30 = day(today - 29 * DAY);
      const iso30 = new Date(Date.parse(`${from30}T00:00:00Z`)).toISOString();
      const isoEnd = new Date(Date.parse(`${day(today)}T00:00:00Z`) + DAY).toISOString();
      const calls: Array<[string, string, string?]> = [
        ['session', '/admin/session'],
        ['members, first page', '/admin/members?limit=25'],
        ['members, next page', `/admin/members?limit=25&after=${page2}`],
        ['members, search', '/admin/members?q=member1234&limit=25'],
        ['members, tier filter', '/admin/members?tier=premium&status=active&limit=25'],
        ['member detail (5 keys)', `/admin/members/${heavyMember}`],
        ['key limits state', '/admin/keys/bk-000001/limits'],
        ['keys, first page', '/admin/keys?limit=25'],
        ['keys, next page', `/admin/keys?limit=25&after=${keysPage2}`],
        ['keys, search by key name', `/admin/keys?q=${encodeURIComponent('key 43210')}&limit=25`],
        ['keys, search by member', '/admin/keys?q=member1234&limit=25'],
        ['keys, active keys of a member', `/admin/keys?member=${heavyMember}&status=active&limit=25`],
        ['member quotas (5 keys)', `/admin/members/${heavyMember}/quotas`],
        ['overview, last 60 min (JSON)', '/admin/overview?minutes=60'],
        ['models', '/admin/models'],
        ['queues', '/admin/queues'],
        ['audit log', '/admin/audit?limit=50'],
        ['operators', '/admin/operators'],
        ['overview: 24 h per model and hour', '/admin/usage/hourly?hours=24'],
        [
          'usage: 30 days by model',
          `/admin/usage/daily?from=${from30}&group_by=model`,
          `/admin/usage?from=${iso30}&to=${isoEnd}&group_by=model`,
        ],
        [
          'usage: heaviest member, 30 days by model',
          `/admin/usage/daily?from=${from30}&member=${heavyMember}&group_by=model`,
          `/admin/usage?from=${iso30}&to=${isoEnd}&member=${heavyMember}&group_by=model`,
        ],
        [
          'usage: heaviest key, 30 days',
          `/admin/usage/daily?from=${from30}&key=bk-000001&group_by=none`,
          `/admin/usage?from=${iso30}&to=${isoEnd}&key=bk-000001&group_by=key`,
        ],
        [
          'usage: 30 days by member (all members)',
          `/admin/usage/daily?from=${from30}&group_by=member`,
          `/admin/usage?from=${iso30}&to=${isoEnd}&group_by=member`,
        ],
        // The request log (ADR 0110): a copy of the ledger's last 30 days, refusals included.
        ['logs: newest page (all members)', '/admin/logs?limit=50'],
        ['logs: heaviest member, newest page', `/admin/logs?member=${heavyMember}&limit=50`],
        ['logs: heaviest member, 429s', `/admin/logs?member=${heavyMember}&status=429&limit=50`],
        [
          'logs: heaviest key, last day',
          `/admin/logs?key=bk-000001&from=${new Date(today - DAY).toISOString()}`,
        ],
        ['logs: model', '/admin/logs?model=chat-G&limit=50'],
        ['logs: status 5xx / 429 (all members)', '/admin/logs?status=429&limit=50'],
        ['logs: error code (all members)', '/admin/logs?code=rate_limit_exceeded&limit=50'],
        [
          'logs: time range (one hour, 10 days ago)',
          `/admin/logs?from=${new Date(today - 10 * DAY).toISOString()}&to=${new Date(today - 10 * DAY + 3_600_000).toISOString()}&limit=50`,
        ],
        ['logs: live tail (newest page, every 2 s)', '/admin/logs?limit=50'],
        ['logs: lookup by request id', '/admin/logs/br-4242'],
        ['member refusals (why refused)', `/admin/members/${heavyMember}/refusals`],
      ];
      const time = async (path: string, n: number) => {
        for (let i = 0; i < 3; i++) await get(path);
        const ms: number[] = [];
        for (let i = 0; i < n; i++) {
          const s = performance.now();
          await get(path);
          ms.push(performance.now() - s);
        }
        return { p50: pct(ms, 50), p95: pct(ms, 95) };
      };
      const rows: string[][] = [];
      // The query the all-members ranking used before the monthly bounds (daily rollup only), timed
      // in SQL in the same run: the side-by-side baseline of that row (see bench/README.md).
      const previousByMember = `WITH top AS (SELECT "memberId" FROM "UsageDailyMember"
          WHERE "day" BETWEEN '${from30}'::date AND '${day(today)}'::date
          GROUP BY 1 ORDER BY sum("totalTokens") DESC, 1 LIMIT 50)
        SELECT to_char("day", 'YYYY-MM-DD') AS day, "memberId"::text AS g, sum("requests")::int AS r,
               sum("errors")::int AS e, sum("promptTokens")::float8 AS p, sum("completionTokens")::float8 AS c,
               sum("totalTokens")::float8 AS t
          FROM "UsageDailyMember" WHERE "day" BETWEEN '${from30}'::date AND '${day(today)}'::date
           AND "memberId" IN (SELECT "memberId" FROM top) GROUP BY 1, 2 ORDER BY 1, 2`;
      /** The all-members call over HTTP and the previous query in SQL, alternated (same load for both). */
      const alternate = async (path: string, q: string, n: number) => {
        for (let i = 0; i < 3; i++) await Promise.all([get(path), db.prisma.$queryRawUnsafe(q)]);
        const now: number[] = [];
        const before: number[] = [];
        for (let i = 0; i < n; i++) {
          let s = performance.now();
          await get(path);
          now.push(performance.now() - s);
          s = performance.now();
          await db.prisma.$queryRawUnsafe(q);
          before.push(performance.now() - s);
        }
        return {
          now: { p50: pct(now, 50), p95: pct(now, 95) },
          before: { p50: pct(before, 50), p95: pct(before, 95) },
        };
      };
      for (const [name, path, baseline] of calls) {
        const r = await time(path, SAMPLES);
        const b = baseline ? await time(baseline, Math.max(5, Math.floor(SAMPLES / 4))) : undefined;
        rows.push([
          name,
          r.p50.toFixed(1),
          r.p95.toFixed(1),
          b ? b.p50.toFixed(1) : '',
          b ? b.p95.toFixed(1) : '',
          r.p95 <= 200 ? 'yes' : 'NO',
        ]);
        log(`${name}: p95 ${r.p95.toFixed(1)} ms${b ? ` (raw ledger p95 ${b.p95.toFixed(1)} ms)` : ''}`);
      }
      const pair = await alternate(
        `/admin/usage/daily?from=${from30}&group_by=member`,
        previousByMember,
        SAMPLES,
      );
      for (const [name, r] of [
        ['usage: 30 days by member (alternated with the next row)', pair.now],
        ['usage: 30 days by member, previous query (daily rollup only; SQL, no HTTP)', pair.before],
      ] as const) {
        rows.push([name, r.p50.toFixed(1), r.p95.toFixed(1), '', '', r.p95 <= 200 ? 'yes' : 'NO']);
        log(`${name}: p95 ${r.p95.toFixed(1)} ms`);
      }
      console.log(
        `\nconsole API, ${MEMBERS} members, ${KEYS} keys, ${ROWS} ledger rows; ${SAMPLES} sequential requests each (ms)\n`,
      );
      console.log('| call | p50 | p95 | raw ledger p50 | raw ledger p95 | p95 <= 200 ms |');
      console.log('| --- | --- | --- | --- | --- | --- |');
      for (const r of rows) console.log(`| ${r.join(' | ')} |`);
    } finally {
      await gw.close();
    }
  } finally {
    await db.drop();
  }
}

/** 10,000 members, 50,000 keys, 5 M ledger rows and the rollups, all in SQL. */
async function seed(db: BenchDatabase) {
  const sql = (q: string) => db.prisma.$executeRawUnsafe(q);
  log(`seeding ${MEMBERS} members, ${KEYS} keys, ${ROWS} usage rows into ${db.databaseUrl}`);
  await sql(`INSERT INTO "Member" ("id", "name", "email", "tier", "billingPeriodAnchor", "createdAt", "updatedAt")
    SELECT 'bm-' || lpad(i::text, 6, '0'), 'Member ' || i, 'member' || i || '@example.com',
           (ARRAY['community', 'inference', 'premium'])[1 + i % 3]::"Tier", now() - interval '40 days',
           now() - make_interval(secs => ${MEMBERS} - i), now()
      FROM generate_series(1, ${MEMBERS}) i`);
  await sql(`INSERT INTO "ApiKey" ("id", "memberId", "name", "prefix", "hash", "createdAt")
    SELECT 'bk-' || lpad(i::text, 6, '0'), 'bm-' || lpad((1 + (i - 1) % ${MEMBERS})::text, 6, '0'), 'key ' || i,
           'sk-inf-b' || lpad(i::text, 6, '0'), md5('k' || i) || md5('h' || i), now()
      FROM generate_series(1, ${KEYS}) i`);
  log('members and keys in');
  for (const back of [0, 1, 2, 3])
    await db.prisma.$queryRawUnsafe(
      `SELECT usage_event_ensure_partition(date_trunc('month', now()) - interval '${back} month')`,
    );
  const models = "ARRAY['chat-A','chat-B','chat-C','chat-D','chat-E','chat-F','chat-G','embed-model']";
  for (let start = 1; start <= ROWS; start += CHUNK) {
    const end = Math.min(ROWS, start + CHUNK - 1);
    // Key k = 1 + floor(KEYS * r^3): a few keys carry most of the traffic.
    await sql(`INSERT INTO "UsageEvent" ("requestId", "memberId", "keyId", "model", "endpoint", "promptTokens",
                 "completionTokens", "totalTokens", "status", "latencyMs", "createdAt")
      SELECT 'br-' || i, 'bm-' || lpad((1 + (k - 1) % ${MEMBERS})::text, 6, '0'), 'bk-' || lpad(k::text, 6, '0'),
             (${models})[1 + (i % 8)], '/v1/chat/completions', 100, 20, 120,
             CASE WHEN i % 50 = 0 THEN 429 ELSE 200 END, 50 + i % 400,
             now() - make_interval(secs => ((i::bigint * 7919) % (60 * 86400))::float8 + random())
        FROM (SELECT i, 1 + floor(${KEYS} * power(random(), 3))::int AS k
                FROM generate_series(${start}, ${end}) i) s`);
    log(`usage rows ${end}`);
  }
  // The rollups, built exactly as the operator_console/usage_rollups migration backfills them.
  await sql(`INSERT INTO "UsageDaily" SELECT ("createdAt" AT TIME ZONE 'UTC')::date, "memberId", "keyId", "model",
               count(*), count(*) FILTER (WHERE "status" >= 400), sum("promptTokens"), sum("completionTokens"),
               sum("totalTokens") FROM "UsageEvent" GROUP BY 1, 2, 3, 4`);
  await sql(`INSERT INTO "UsageDailyMember" SELECT ("createdAt" AT TIME ZONE 'UTC')::date, "memberId", count(*),
               count(*) FILTER (WHERE "status" >= 400), sum("promptTokens"), sum("completionTokens"),
               sum("totalTokens") FROM "UsageEvent" GROUP BY 1, 2`);
  await sql(`INSERT INTO "UsageMonthlyMember" SELECT date_trunc('month', "day")::date, "memberId", sum("requests"),
               sum("totalTokens") FROM "UsageDailyMember" GROUP BY 1, 2`);
  await sql(`INSERT INTO "UsageHourlyModel" SELECT date_trunc('hour', "createdAt", 'UTC'), "model", count(*),
               count(*) FILTER (WHERE "status" >= 400), sum("promptTokens"), sum("completionTokens"),
               sum("totalTokens"), sum("latencyMs") FROM "UsageEvent" GROUP BY 1, 2`);
  // The request log: the last 30 days of the ledger, its 429s as refusals by a key limit.
  for (let back = 0; back < 31; back++)
    await new RequestLogRepository(db.prisma).ensurePartitions([Date.now() - back * DAY]);
  await sql(`INSERT INTO "request_log" ("time", "request_id", "member_id", "key_id", "model", "endpoint", "status",
               "error_code", "limit_name", "refused", "prompt_tokens", "completion_tokens", "total_tokens", "latency_ms")
    SELECT "createdAt", "requestId", "memberId", "keyId", "model", "endpoint", "status",
           CASE WHEN "status" = 429 THEN 'rate_limit_exceeded' END,
           CASE WHEN "status" = 429 THEN 'key.requests_per_minute' END, "status" = 429,
           "promptTokens", "completionTokens", "totalTokens", "latencyMs"
      FROM "UsageEvent" WHERE "createdAt" >= date_trunc('day', now() - interval '30 days', 'UTC')`);
  log('request log in');
  await sql('ANALYZE');
  const [counts] = (await db.prisma.$queryRawUnsafe(
    `SELECT (SELECT count(*) FROM "UsageEvent")::int AS ledger, (SELECT count(*) FROM "UsageDaily")::int AS daily,
            (SELECT count(*) FROM "UsageHourlyModel")::int AS hourly`,
  )) as Array<{ ledger: number; daily: number; hourly: number }>;
  log(
    `seeded: ledger ${counts?.ledger} rows, UsageDaily ${counts?.daily} rows, UsageHourlyModel ${counts?.hourly} rows`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
