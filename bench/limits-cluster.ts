// What one admission costs Redis and the gateway: the limits engine driven directly (no HTTP), closed
// loop, against one Redis primary and against a 3-primary Redis Cluster, both started here on private
// ports (Debian's redis-server), side by side with the previous engine (two scripts per request: admit
// then settle: apps/gateway/src/limits as of b2aee83, the last commit before the batched script (977b6ac),
// taken from git at run time into var/tmp/) on the same single primary.
//
//   node --conditions=source --import ./tools/ts-register.js bench/limits-cluster.ts
//   BENCH_SECONDS=6 BENCH_IN_FLIGHT=256 BENCH_MEMBERS=2000 node ... bench/limits-cluster.ts
//
// Each request is chat-A's default plan (key requests per minute, tokens per minute, the member's monthly
// allowance holding max_tokens, key concurrency), limits raised out of reach so nothing is refused,
// spread over BENCH_MEMBERS members (one key each), admitted and then settled with its real usage.
// Redis CPU is the user+system time of the redis-server processes (/proc/<pid>/stat, all primaries of
// the cluster) over the measured round; engine CPU is this process's (the driver loop included, the
// same for every engine). Numbers, not pass/fail; every server stops by itself at the end.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type CatalogEntry, CatalogEntrySchema, type LimitsFile } from '@infer/contracts';
import { BATCH_LUA, type LimitSubject, LimitsStore } from '@infer/gateway/public';
import { createRedisClient, failFastRedisOptions } from '@infer/rpc';
import { createLogger } from '@infer/telemetry';
import type { Redis } from 'ioredis';
import { privateRedis, privateRedisCluster } from '../test/support/private-servers.js';
import { cpuMs, pct } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 256);
const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 2000);

const log = createLogger('bench', 'silent');
const huge = 1_000_000_000;
const file: LimitsFile = {
  key: { requests_per_minute: huge, concurrent: huge },
  models: { 'chat-A': { tokens_per_minute: huge, allowance_tokens: huge } },
};
const chatA = CatalogEntrySchema.parse({
  id: 'chat-A',
  kind: 'chat',
  rank: 1,
  tiers: ['inference'],
  engine: { type: 'simulator' },
  max_output_tokens: 256,
}) as CatalogEntry;
const body = {
  model: 'chat-A',
  messages: [{ role: 'user', content: 'Say hello in five words.' }],
  max_tokens: 64,
};
const subjects: LimitSubject[] = Array.from({ length: MEMBERS }, (_, i) => ({
  keyId: `bk${i}`,
  memberId: `bm${i}`,
  tier: 'inference',
  billingAnchor: new Date(Date.UTC(2026, 0, 1)),
  overrides: null,
}));

interface Engine {
  admitModel(s: LimitSubject, m: CatalogEntry, b: unknown): Promise<{ settle(n: number): Promise<void> }>;
  stop(): Promise<void>;
}

/** The previous engine (two scripts per request), taken from git so the tree keeps one limits store. */
const BASELINE_COMMIT = 'b2aee83';
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const baselineDir = `${repoRoot}var/tmp/limits-baseline-${BASELINE_COMMIT}`;
rmSync(baselineDir, { recursive: true, force: true });
mkdirSync(baselineDir, { recursive: true });
execFileSync(
  'sh',
  // That commit imported ConfigError from libs/service-kit, since split (ADR 0033): now @infer/runtime's.
  [
    '-c',
    `git archive ${BASELINE_COMMIT} apps/gateway/src/limits | tar -x -C "${baselineDir}" && ` +
      `sed -i "s#'@infer/service-kit'#'@infer/runtime'#" "${baselineDir}"/apps/gateway/src/limits/*.ts`,
  ],
  { cwd: repoRoot },
);
const baselineModule = (file: string) =>
  import(pathToFileURL(`${baselineDir}/apps/gateway/src/limits/${file}`).href);
const { LimitsEngine: BaselineEngine } = (await baselineModule('limits.engine.ts')) as {
  LimitsEngine: new (o: ConstructorParameters<typeof LimitsStore>[0]) => Engine;
};
const { ADMIT_LUA, SETTLE_LUA } = (await baselineModule('scripts.ts')) as {
  ADMIT_LUA: string;
  SETTLE_LUA: string;
};

interface Row {
  engine: string;
  redis: string;
  admissions: number;
  perSec: number;
  redisUs: number;
  /** Redis CPU per admission less what the servers use idle (cron, cluster bus), measured before. */
  redisNetUs: number;
  redisBusy: number;
  engineUs: number;
  p50: number;
  p99: number;
  errors: number;
}

/** CPU ms per second the servers use with no traffic (serverCron, the cluster bus's pings). */
async function idleCpu(pids: number[]): Promise<number> {
  const c0 = pids.reduce((s, p) => s + cpuMs(p), 0);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 3000));
  return (pids.reduce((s, p) => s + cpuMs(p), 0) - c0) / ((performance.now() - t0) / 1000);
}

const idle = new Map<string, number>();

async function round(
  name: string,
  target: string,
  engine: Engine,
  pids: number[],
  seconds: number,
): Promise<Row> {
  const lat: number[] = [];
  let errors = 0;
  let n = 0;
  const redisCpu0 = pids.reduce((s, p) => s + cpuMs(p), 0);
  const ownCpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let i = 0;
  const loop = async () => {
    while (performance.now() < end) {
      const s = subjects[i++ % subjects.length]!;
      const a0 = performance.now();
      try {
        const adm = await engine.admitModel(s, chatA, body);
        lat.push(performance.now() - a0);
        await adm.settle(20);
        n++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
  const wall = (performance.now() - t0) / 1000;
  const redisMs = pids.reduce((s, p) => s + cpuMs(p), 0) - redisCpu0;
  const own = process.cpuUsage(ownCpu0);
  return {
    engine: name,
    redis: target,
    admissions: n,
    perSec: n / wall,
    redisUs: (redisMs * 1000) / n,
    redisNetUs: ((redisMs - (idle.get(target) ?? 0) * wall) * 1000) / n,
    redisBusy: redisMs / 1000 / wall / pids.length,
    engineUs: (own.user + own.system) / n,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    errors,
  };
}

async function measure(name: string, target: string, make: () => Engine, pids: number[]): Promise<Row> {
  const engine = make();
  // Warm-up: JIT, scripts loaded, every member's quota counter rebuilt (seeded) once.
  await round(name, target, engine, pids, Math.min(2, SECONDS));
  const row = await round(name, target, engine, pids, SECONDS);
  await engine.stop();
  return row;
}

const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');

/**
 * The scripts alone at saturation: redis-benchmark (pipelined, 4 connections) calls EVALSHA with the
 * exact keys and arguments the engines send for chat-A's plan, as fast as Redis answers, while we read
 * redis-server's CPU time. `perCall` requests (distinct members) per call for the batched script; the
 * previous engine needs two calls per request (admit, then settle).
 */
function scriptCost(
  port: number,
  pid: number,
  calls: { label: string; perCall: number; args: string[][] }[],
) {
  const out: {
    script: string;
    'requests per call': number;
    'requests/s': string;
    'Redis CPU us/request': string;
  }[] = [];
  for (const c of calls) {
    const n = Math.max(2000, Math.floor(200_000 / c.perCall));
    const cpu0 = cpuMs(pid);
    const t0 = performance.now();
    for (const args of c.args)
      execFileSync(
        'redis-benchmark',
        ['-p', String(port), '-c', '4', '-P', '16', '-n', String(n), '-q', ...args],
        {
          stdio: 'ignore',
        },
      );
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuMs(pid) - cpu0;
    const requests = n * c.perCall;
    out.push({
      script: c.label,
      'requests per call': c.perCall,
      'requests/s': (requests / wall).toFixed(0),
      'Redis CPU us/request': ((cpu * 1000) / requests).toFixed(1),
    });
  }
  return out;
}

/** EVALSHA of the batched script: `b` requests (members) per call, each a settlement and an admission. */
function batchedCall(b: number, now: number): string[] {
  const keys: string[] = [];
  const argv: (string | number)[] = [2 * b, 30_000, 60_000, 3_600_000];
  const min = Math.floor(now / 60_000);
  for (let i = 0; i < b; i++) {
    const p = `sat:{m${i}}:`;
    const q = `${p}m:chat-A:mo:203105`;
    const rpm = `${p}k:k${i}:rpm:${min}`;
    const tpm = `${p}k:k${i}:m:chat-A:tpm:${min}`;
    const cc = `${p}k:k${i}:cc`;
    keys.push(cc, tpm, q);
    argv.push('S', `l${i}`, 3, 'L', 'W', 5, 'X', -59);
    keys.push(q, rpm, tpm, cc);
    argv.push('A', `l${i}`, now, 15, 64, 64, 4, 'Q', huge, 'r', huge, 't', huge, 'L', huge);
  }
  return ['EVALSHA', sha(BATCH_LUA), String(keys.length), ...keys, ...argv.map(String)];
}

/** The previous engine's two calls for one request: ADMIT (4 checks) and SETTLE (3 operations). */
function baselineCalls(now: number): string[][] {
  const min = Math.floor(now / 60_000);
  const q = 'satb:m:m0:chat-A:mo:203105';
  const rpm = `satb:k:k0:rpm:${min}`;
  const tpm = `satb:k:k0:m:chat-A:tpm:${min}`;
  const cc = 'satb:k:k0:cc';
  const admit = [now, 'lease0', now + 30_000, 4];
  admit.push('W', huge, 15, 0, 0, 60_000, 1, 64, 'W', huge, 1, 0, 0, 60_000, 0, 0);
  admit.push('W', huge, 15, 0, 0, 60_000, 0, 0, 'L', huge, 1, 0, 0, 60_000, 0, 0);
  const settle = ['lease0', 3, 'L', 0, '', 0, 'W', 5, '', 60_000, 'WX', -59, '', 60_000];
  return [
    ['EVALSHA', sha(ADMIT_LUA), '4', q, rpm, tpm, cc, ...admit.map(String)],
    ['EVALSHA', sha(SETTLE_LUA), '3', cc, tpm, q, ...settle.map(String)],
  ];
}

async function main(): Promise<void> {
  const single = await privateRedis();
  const cluster = await privateRedisCluster(3, 0);
  const clients: Redis[] = [];
  const client = async (url: string) => {
    const c = createRedisClient(url, {
      lazyConnect: true,
      enableAutoPipelining: true,
      ...failFastRedisOptions(1_000),
    });
    c.on('error', () => undefined);
    await c.connect();
    clients.push(c);
    return c;
  };
  const ledger = { total: async () => 0 };
  try {
    const singleRedis = await client(single.url);
    const clusterRedis = await client(cluster.url);
    const singlePids = [single.pid!()!];
    const clusterPids = cluster.nodes.map((n) => n.pid()!);
    idle.set('1 primary', await idleCpu(singlePids));
    idle.set('3-primary cluster', await idleCpu(clusterPids));
    const rows: Row[] = [];
    for (let r = 0; r < 2; r++) {
      const last: Row[] = [];
      last.push(
        await measure(
          'previous (admit + settle scripts)',
          '1 primary',
          () => new BaselineEngine({ redis: singleRedis, ledger, log, file, prefix: `b${r}:` }),
          singlePids,
        ),
      );
      last.push(
        await measure(
          'batched (this branch)',
          '1 primary',
          () => new LimitsStore({ redis: singleRedis, ledger, log, file, prefix: `n${r}:` }),
          singlePids,
        ),
      );
      last.push(
        await measure(
          'batched (this branch)',
          '3-primary cluster',
          () => new LimitsStore({ redis: clusterRedis, ledger, log, file, prefix: `c${r}:` }),
          clusterPids,
        ),
      );
      if (r === 1) rows.push(...last);
    }
    console.log(
      `\nRedis CPU with no traffic: one primary ${idle.get('1 primary')!.toFixed(1)} ms/s, ` +
        `the 3 cluster primaries ${idle.get('3-primary cluster')!.toFixed(1)} ms/s`,
    );
    console.log(
      `\nlimits admission path, ${SECONDS} s per round, ${IN_FLIGHT} requests in flight, ${MEMBERS} members, ` +
        `chat-A default plan (4 checks) + settle, ${new Date().toISOString()}\n`,
    );
    console.table(
      rows.map((r) => ({
        engine: r.engine,
        redis: r.redis,
        'admissions/s': r.perSec.toFixed(0),
        'Redis CPU us/adm': r.redisUs.toFixed(1),
        'net of idle': r.redisNetUs.toFixed(1),
        'Redis busy (per primary)': `${(r.redisBusy * 100).toFixed(0)} %`,
        'engine CPU us/adm': r.engineUs.toFixed(1),
        'admit p50 ms': r.p50.toFixed(2),
        'admit p99 ms': r.p99.toFixed(2),
        errors: r.errors,
      })),
    );
    // The scripts alone, Redis saturated by redis-benchmark (the number that sizes a primary).
    const now = Date.UTC(2031, 4, 10, 12, 0, 30);
    for (const lua of [BATCH_LUA, ADMIT_LUA, SETTLE_LUA]) await singleRedis.script('LOAD', lua);
    for (let i = 0; i < 16; i++) await singleRedis.set(`sat:{m${i}}:m:chat-A:mo:203105`, 1);
    await singleRedis.set('satb:m:m0:chat-A:mo:203105', 0);
    const sat = scriptCost(single.port, singlePids[0]!, [
      { label: 'previous: ADMIT + SETTLE', perCall: 1, args: baselineCalls(now) },
      { label: 'batched: 1 request per call', perCall: 1, args: [batchedCall(1, now)] },
      { label: 'batched: 4 requests per call', perCall: 4, args: [batchedCall(4, now)] },
      { label: 'batched: 16 requests per call', perCall: 16, args: [batchedCall(16, now)] },
    ]);
    console.log(
      '\nthe scripts alone at saturation (redis-benchmark -c 4 -P 16, one primary, chat-A plan):\n',
    );
    console.table(sat);
    for (const r of rows)
      console.log(
        `${r.engine} on ${r.redis}: one Redis core would carry about ` +
          `${Math.floor(1e6 / r.redisUs).toLocaleString('en-US')} admissions/s per primary (1e6 / Redis CPU us)`,
      );
  } finally {
    for (const c of clients) c.disconnect();
    await single.destroy();
    await cluster.destroy();
  }
}

await main();
