// The idle RSS of one production gateway (issue 13: <= 100 MiB), and what one admin request adds.
//   node --conditions=source --import ./tools/ts-register.js bench/gateway-rss.ts [--idle 20] [--admin 20]
//        [--rounds 1] [--no-build] [--modules] [--flags="<more node flags>"]
// Builds the production output (unless --no-build), makes a fresh database (bench/support.ts), then per
// round starts `node <image flags> apps/gateway/dist/main.js` with the image's GLIBC_TUNABLES, limits on,
// on the machine's Redis/NATS (private stream, subjects and Redis prefix). It sends one key-authenticated
// GET /v1/models (auth + catalog), reads RSS and /proc/<pid>/smaps_rollup `--idle` s after start, then
// (with `--admin S`) GET /admin/keys twice with ADMIN_TOKEN (a route on Prisma's client; both timed) and
// reads them again S s later. `--modules` also runs the gateway with bench/stack/module-watch.mjs preloaded and
// prints which of Prisma's client modules it loaded before and after the admin request (that run's RSS
// is not reported: the hook is not free). Each round also starts, at the same time, the floor: NestJS on
// Fastify with one route and nothing else (bench/stack/nest-floor.mjs, same node flags and allocator
// settings, the same idle collection at 10 s), the framework the gateway is built on. Numbers, not pass/fail.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { connectNats } from '@infer/rpc';
import { jetstreamManager } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import { buildProduction, imageEnv, imageNodeFlags } from './stack/lib.js';
import { createBenchDatabase, freePort } from './support.js';

const { values: opt } = parseArgs({
  options: {
    idle: { type: 'string', default: '20' },
    admin: { type: 'string' },
    rounds: { type: 'string', default: '1' },
    'no-build': { type: 'boolean', default: false },
    modules: { type: 'boolean', default: false },
    flags: { type: 'string', default: '' },
  },
});
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ADMIN_TOKEN = randomBytes(24).toString('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (kib: number) => (kib / 1024).toFixed(1);

function memory(pid: number): { rss: number; anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { rss: field('Rss'), anon: field('Anonymous'), file: field('Rss') - field('Anonymous') };
}

interface Gateway {
  pid: number;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

async function startGateway(databaseUrl: string, run: string, extraFlags: string[]): Promise<Gateway> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [...imageNodeFlags('gateway'), ...extraFlags, 'apps/gateway/dist/main.js'],
    {
      env: {
        ...process.env,
        NODE_ENV: 'production',
        NODE_OPTIONS: '',
        ...imageEnv('gateway'),
        NATS_URL,
        REDIS_URL,
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'warn',
        HOST: '127.0.0.1',
        PORT: String(port),
        ALLOW_INSECURE_HTTP: '1',
        LIMITS_ENABLED: '1',
        ADMIN_TOKEN,
        MODEL_SUBJECT_PREFIX: `bench.${run}.`,
        USAGE_STREAM: `BENCH_USAGE_${run}`,
        USAGE_SUBJECT_ROOT: `bench_${run}.usage`,
        LIMITS_REDIS_PREFIX: `benchlim:${run}:`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited: ${out}`);
    if (Date.now() > deadline) throw new Error(`gateway not ready after 30 s: ${out}`);
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await sleep(100);
  }
  return { pid: child.pid!, url, output: () => out, stop: () => stopChild(child) };
}

/** SIGTERM, then SIGKILL after 10 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000)]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

/** bench/stack/nest-floor.mjs with the gateway image's node flags and allocator settings. */
async function startFloor(extraFlags: string[]): Promise<Gateway> {
  const child = spawn(
    process.execPath,
    [...imageNodeFlags('gateway'), ...extraFlags, 'bench/stack/nest-floor.mjs'],
    {
      env: { ...process.env, NODE_ENV: 'production', NODE_OPTIONS: '', ...imageEnv('gateway') },
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const deadline = Date.now() + 30_000;
  while (!/listening (\d+)/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`nest-floor did not start: ${out}`);
    await sleep(50);
  }
  const url = `http://127.0.0.1:${/listening (\d+)/.exec(out)?.[1]}`;
  return { pid: child.pid!, url, output: () => out, stop: () => stopChild(child) };
}

async function get(url: string, auth: string): Promise<number> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${auth}` } });
  await res.arrayBuffer();
  return res.status;
}

if (!opt['no-build']) buildProduction();
const idleMs = Number(opt.idle) * 1000;
const adminMs = opt.admin === undefined ? null : Number(opt.admin) * 1000;
const db = await createBenchDatabase();
const runs: string[] = [];
try {
  if (opt.modules) {
    const run = randomBytes(4).toString('hex');
    runs.push(run);
    const gw = await startGateway(db.databaseUrl, run, ['--import', './bench/stack/module-watch.mjs']);
    try {
      const status = await get(`${gw.url}/v1/models`, db.key);
      await sleep(500);
      const before = gw.output().match(/^module-watch: .*$/gm) ?? [];
      console.log(
        `started, /readyz, /v1/models (${status}): ${before.length ? before.join('; ') : 'no Prisma client module loaded'}`,
      );
      const admin = await get(`${gw.url}/admin/keys`, ADMIN_TOKEN);
      await sleep(500);
      const after = (gw.output().match(/^module-watch: .*$/gm) ?? []).slice(before.length);
      console.log(
        `after GET /admin/keys (${admin}): ${after.length ? after.join('; ') : 'nothing more loaded'}`,
      );
    } finally {
      await gw.stop();
    }
  }
  for (let round = 1; round <= Number(opt.rounds); round++) {
    const run = randomBytes(4).toString('hex');
    runs.push(run);
    const started = Date.now();
    const gw = await startGateway(db.databaseUrl, run, opt.flags ? opt.flags.split(' ') : []);
    // The floor beside it, started at the same time: NestJS on Fastify alone (bench/stack/nest-floor.mjs).
    const floor = await startFloor(opt.flags ? opt.flags.split(' ') : []);
    try {
      const status = await get(`${gw.url}/v1/models`, db.key);
      if (status !== 200) throw new Error(`/v1/models answered ${status}`);
      if ((await get(`${floor.url}/hello`, '')) !== 200) throw new Error('the floor did not answer');
      await sleep(Math.max(0, started + idleMs - Date.now()));
      const idle = memory(gw.pid);
      const fl = memory(floor.pid);
      let line =
        `round ${round}: idle ${opt.idle} s after start: RSS ${mib(idle.rss)} MiB (file ${mib(idle.file)}, anonymous ${mib(idle.anon)}); ` +
        `the floor, NestJS on Fastify with one route: ${mib(fl.rss)} MiB (file ${mib(fl.file)}, anonymous ${mib(fl.anon)})`;
      if (adminMs !== null) {
        const t0 = performance.now();
        const s = await get(`${gw.url}/admin/keys`, ADMIN_TOKEN);
        const first = performance.now() - t0;
        if (s !== 200) throw new Error(`/admin/keys answered ${s}`);
        const t1 = performance.now();
        await get(`${gw.url}/admin/keys`, ADMIN_TOKEN);
        const second = performance.now() - t1;
        line += `; first GET /admin/keys ${first.toFixed(0)} ms, the next ${second.toFixed(0)} ms`;
        const at = Date.now();
        await sleep(Math.max(0, at + adminMs - Date.now()));
        const after = memory(gw.pid);
        line += `; ${opt.admin} s after one admin request: RSS ${mib(after.rss)} MiB (file ${mib(after.file)}, anonymous ${mib(after.anon)})`;
      }
      console.log(line);
    } finally {
      await gw.stop();
      await floor.stop();
    }
  }
} finally {
  await db.drop();
  const nc = await connectNats(NATS_URL, 'gateway-rss-cleanup');
  const jsm = await jetstreamManager(nc);
  for (const run of runs) await jsm.streams.delete(`BENCH_USAGE_${run}`).catch(() => undefined);
  await nc.close();
  const redis = new Redis(REDIS_URL);
  for (const run of runs) {
    const keys = await redis.keys(`benchlim:${run}:*`);
    if (keys.length) await redis.del(...keys);
  }
  redis.disconnect();
}
