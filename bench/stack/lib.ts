/**
 * The stack that bench/stack.ts and bench/profile-gateway.ts measure, started from the PRODUCTION build
 * (apps/<app>/dist, NODE_ENV=production, the way docker/<app>.Dockerfile runs it) on private ports and
 * private NATS subjects / stream / Redis prefix:
 *
 *   fake upstream (bench/stack/upstream.mjs, a test double answering at once)
 *   raw node:http proxy to it (bench/stack/raw-proxy.mjs): the baseline
 *   chat-service (dist, its subjects under a prefix of this run), ledger-writer (dist, its own stream)
 *   gateway with limits on and gateway with limits off (dist/main.js), same database, Redis, NATS
 *
 * The catalog is config/models.yaml plus `chat-up` (chat-A's settings on the `openai` engine pointed at
 * the fake upstream), `chat-slow` (the simulator at 20 ms per token, for long-lived streams) and, with
 * `lagMs`, `chat-lag` (the simulator answering after that many ms). Two
 * keys: one whose limits are out of reach (every check still runs) and one allowed 1 request a minute
 * (its requests are refused with 429 after the first).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { type CatalogEntry, CatalogEntrySchema } from '@infer/contracts';
import { CatalogRepository, loadCatalogFile } from '@infer/persistence';
import { connectNats } from '@infer/rpc';
import { jetstreamManager } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import type { Pool } from 'undici';
import { parseAllDocuments } from 'yaml';
import { type BenchDatabase, createBenchDatabase, freePort } from '../support.js';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  url?: string;
  /** What it printed on stdout so far (the first 10,000 characters). */
  output(): string;
}

export interface Stack {
  upstream: Proc & { url: string };
  rawProxy: Proc & { url: string };
  chat: Proc;
  ledger: Proc;
  gatewayOn: Proc & { url: string };
  gatewayOff: Proc & { url: string };
  /**
   * The concurrent streams' floor (bench/stack/sse-floor.mjs): a bare node:http server streaming what
   * the gateway relays for chat-slow, with the gateways' node flags, in the same memory limit.
   */
  sseFloor: Proc & { url: string };
  /** The node flags the gateways run with (their image's CMD unless `gatewayFlags` replaced them). */
  gatewayOnFlags: string[];
  /** The NATS server's pid when it runs on this machine (shared with everything else on it). */
  natsPid: number | null;
  /** The Redis server's pid when it runs on this machine (shared too). */
  redisPid: number | null;
  db: BenchDatabase;
  /** Limits out of reach / 1 request a minute. */
  key: string;
  limitedKey: string;
  close(): Promise<void>;
}

export interface StackOptions {
  /** Extra node flags for the limits-on gateway (e.g. --cpu-prof), after its production flags. */
  gatewayOnNodeArgs?: string[];
  /**
   * The production node flags of both gateways, in place of those of docker/gateway.Dockerfile's CMD
   * (comparing flags: `[]` is a bare `node`).
   */
  gatewayFlags?: string[];
  /** Start the limits-off gateway too (default true). */
  withGatewayOff?: boolean;
  /** Pin each gateway to one core with taskset (cpu 0 / cpu 1). */
  pin?: boolean;
  /**
   * Runs each gateway in its own memory cgroup of this many MiB, as its pod's `resources.limits.memory`
   * does (podMemoryLimitMiB): Node sizes V8's heap, and with it the young generation, from that limit.
   * Unset: the machine's memory (24 GiB here), a larger heap than in any pod.
   */
  memoryLimitMiB?: number;
  /** Adds model `chat-lag`: the simulator with its first token (max_tokens 1: its answer) after this many ms. */
  lagMs?: number;
}

/** Builds the libs and the three apps with tools/build.js (swc, as the Dockerfiles do). */
export function buildProduction(): void {
  const projects = [
    'libs/contracts',
    'libs/persistence',
    'libs/telemetry',
    'libs/rpc',
    'libs/runtime',
    'libs/image-store',
    'libs/search-index',
    'libs/engine-pool',
  ];
  for (const p of [...projects, 'apps/gateway', 'apps/chat-service', 'apps/ledger-writer']) {
    if (!existsSync(p)) continue;
    execFileSync(process.execPath, ['tools/build.js', p], { stdio: 'ignore' });
  }
}

/**
 * The node flags an app's image starts it with: what stands between `node` and the script in the CMD of
 * docker/<app>.Dockerfile (so the bench runs the gateway as production does).
 */
export function imageNodeFlags(
  app: string,
  // compare.sh points BENCH_IMAGE_DIR at the docker/ folder of the commit it measures.
  dockerDir = process.env.BENCH_IMAGE_DIR ?? 'docker',
): string[] {
  const cmd = readFileSync(`${dockerDir}/${app}.Dockerfile`, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('CMD ['))
    .at(-1);
  if (!cmd) return [];
  const argv = JSON.parse(cmd.slice(4)) as string[];
  return argv[0] === 'node' ? argv.slice(1, -1) : [];
}

/**
 * The environment an app's image sets for glibc's allocator (`ENV GLIBC_TUNABLES=...` in
 * docker/<app>.Dockerfile), so the bench's processes allocate as production's do.
 */
export function imageEnv(app: string): Record<string, string> {
  const env: Record<string, string> = {};
  const file = readFileSync(`${process.env.BENCH_IMAGE_DIR ?? 'docker'}/${app}.Dockerfile`, 'utf8');
  for (const line of file.split('\n')) {
    const m = /^ENV GLIBC_TUNABLES=(\S+)\s*$/.exec(line);
    if (m?.[1]) env.GLIBC_TUNABLES = m[1];
  }
  return env;
}

const QUANTITY_MIB: Record<string, number> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 };

/**
 * The memory limit of an app's pod: `resources.limits.memory` of the container named after the app in
 * k8s/base/<app>.yaml (not an init container's), in MiB; null when the manifest sets none. Throws on a
 * quantity it does not read (only Ki, Mi and Gi), rather than measure without the limit.
 */
export function podMemoryLimitMiB(app: string, k8sBaseDir = 'k8s/base'): number | null {
  const docs = parseAllDocuments(readFileSync(`${k8sBaseDir}/${app}.yaml`, 'utf8')).map((d) => d.toJS());
  for (const doc of docs) {
    const containers: { name?: string; resources?: { limits?: { memory?: string } } }[] =
      doc?.spec?.template?.spec?.containers ?? [];
    const limit = containers.find((c) => c.name === app)?.resources?.limits?.memory;
    if (limit === undefined) continue;
    const m = /^(\d+)(Ki|Mi|Gi)$/.exec(String(limit));
    if (!m?.[2]) throw new Error(`${app}: memory limit ${limit} (the bench reads Ki, Mi and Gi)`);
    return Number(m[1]) * (QUANTITY_MIB[m[2]] ?? 1);
  }
  return null;
}

/**
 * `--memory-limit` of the benches: `pod` (the gateway container's limit in k8s/base/gateway.yaml, or no
 * limit, said on the console, where this machine has no writable memory cgroup), `none`, or MiB. 0: none.
 */
export function resolveMemoryLimitMiB(arg: string | undefined): number {
  const mib = arg === 'pod' ? (podMemoryLimitMiB('gateway') ?? 0) : arg === 'none' ? 0 : Number(arg);
  if (!Number.isFinite(mib) || mib < 0) throw new Error(`--memory-limit ${arg}: MiB, pod or none`);
  if (arg === 'pod' && mib > 0 && !memoryCgroupWritable()) {
    console.log("no writable memory cgroup here: the gateways run without the pod's memory limit");
    return 0;
  }
  return mib;
}

/** The chat request body of the benches (a short prompt; streamed with usage when `stream`). */
export const chatBody = (model: string, stream = false, maxTokens = 1) =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
    max_tokens: maxTokens,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

/**
 * The same request as chatBody in the Anthropic Messages shape (POST /v1/messages): same prompt, same
 * output cap, streamed when `stream`.
 */
export const messagesBody = (model: string, stream = false, maxTokens = 1) =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
    max_tokens: maxTokens,
    ...(stream ? { stream: true } : {}),
  });

/** One streamed POST on `pool`, drained: [ms to its first body bytes, ms to its end]. Throws unless 200. */
export async function timedStream(
  pool: Pool,
  path: string,
  body: string,
  key?: string,
): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await pool.request({
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body,
  });
  let t1 = 0;
  for await (const _ of res.body) {
    if (!t1) t1 = performance.now();
  }
  if (res.statusCode !== 200) throw new Error(`stream answered ${res.statusCode}`);
  return [t1 - t0, performance.now() - t0];
}

/** Whether this machine lets the bench make a memory cgroup (it is root, the controller is mounted rw). */
export function memoryCgroupWritable(): boolean {
  try {
    memoryCgroup(`bench-probe-${process.pid}`, 64).remove();
    return true;
  } catch {
    return false;
  }
}

/**
 * A fresh memory cgroup limited to `mib` (cgroup v2, or v1's memory controller), for one process: the
 * directory whose `cgroup.procs` the process joins before it execs node. Throws when neither is writable.
 */
function memoryCgroup(name: string, mib: number): { dir: string; remove(): void } {
  const bytes = String(mib * 1024 * 1024);
  const v2 = '/sys/fs/cgroup';
  const v2Controllers = `${v2}/cgroup.controllers`;
  const tries: [string, string][] = [];
  if (existsSync(v2Controllers) && readFileSync(v2Controllers, 'utf8').includes('memory')) {
    tries.push([`${v2}/${name}`, 'memory.max']);
  }
  if (existsSync(`${v2}/memory/cgroup.procs`)) tries.push([`${v2}/memory/${name}`, 'memory.limit_in_bytes']);
  for (const [dir, file] of tries) {
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}/${file}`, bytes);
      return {
        dir,
        remove: () => {
          try {
            rmdirSync(dir);
          } catch {
            // still has a process (killed late): left for the machine
          }
        },
      };
    } catch {
      // not writable here: the next
    }
  }
  throw new Error(
    `--memory-limit: no writable memory cgroup on this machine (tried ${tries.map((t) => t[0]).join(', ') || 'none'})`,
  );
}

/** Spawns a production process; resolves once `ready(stdout so far)` says so (or the probe answers). */
async function spawnProc(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: (out: string) => boolean | Promise<boolean>,
  pinCpu?: number,
  cgroupDir?: string,
): Promise<Proc> {
  let cmd = pinCpu === undefined ? process.execPath : 'taskset';
  let argv = pinCpu === undefined ? args : ['-c', String(pinCpu), process.execPath, ...args];
  if (cgroupDir) {
    // The shell joins the cgroup and execs the command: node starts inside it (same pid).
    argv = ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroupDir, cmd, ...argv];
    cmd = 'sh';
  }
  const child = spawn(cmd, argv, {
    env: { ...process.env, NODE_ENV: 'production', NODE_OPTIONS: '', ...env },
    // stdin a pipe: the helpers exit when it closes (this process gone); stderr shown.
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    if (out.length < 10_000) out += d;
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`);
    if (await Promise.resolve(ready(out)).catch(() => false)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} not ready within 60 s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, child, pid: child.pid ?? 0, output: () => out };
}

const listeningPort = (out: string): number | null => {
  const m = /listening (\d+)/.exec(out);
  return m ? Number(m[1]) : null;
};

function serverPid(name: string): number | null {
  try {
    const pids = execFileSync('pgrep', ['-x', name], { encoding: 'utf8' }).trim().split('\n');
    return pids[0] ? Number(pids[0]) : null;
  } catch {
    return null;
  }
}

async function stopProc(p: Proc | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null) return;
  const exited = new Promise<void>((r) => p.child.once('exit', () => r()));
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const run = randomBytes(4).toString('hex');
  const subjectPrefix = `bench.${run}.`;
  const usageStream = `BENCH_USAGE_${run}`;
  const usageRoot = `bench_${run}.usage`;
  const limitsPrefix = `benchlim:${run}:`;
  const procs: Proc[] = [];
  const cgroups: { remove(): void }[] = [];
  const db = await createBenchDatabase();
  const cleanup = async () => {
    for (const p of [...procs].reverse()) await stopProc(p);
    for (const c of cgroups) c.remove();
    const nc = await connectNats(NATS_URL, 'stack-bench-cleanup');
    await (await jetstreamManager(nc)).streams.delete(usageStream).catch(() => undefined);
    await nc.close();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${limitsPrefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await db.drop();
  };
  try {
    const upstream = await spawnProc(
      'upstream',
      ['bench/stack/upstream.mjs'],
      {},
      (o) => listeningPort(o) !== null,
    );
    procs.push(upstream);
    const upstreamPort = listeningPort(upstream.output());
    const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
    const rawProxy = await spawnProc(
      'raw-proxy',
      ['bench/stack/raw-proxy.mjs'],
      { UPSTREAM_PORT: String(upstreamPort) },
      (o) => listeningPort(o) !== null,
    );
    procs.push(rawProxy);
    const rawUrl = `http://127.0.0.1:${listeningPort(rawProxy.output())}`;

    // The catalog: the default models plus the two of this bench.
    const file = await loadCatalogFile('config/models.yaml');
    const entries = file.models.map((m) => CatalogEntrySchema.parse(m));
    const chatA = entries.find((m) => m.id === 'chat-A');
    if (!chatA) throw new Error('chat-A is not in config/models.yaml');
    const up: CatalogEntry = {
      ...chatA,
      id: 'chat-up',
      rank: 1,
      engine: { type: 'openai', base_url: `${upstreamUrl}/v1`, model: 'bench' } as CatalogEntry['engine'],
    };
    const slow: CatalogEntry = {
      ...chatA,
      id: 'chat-slow',
      rank: 2,
      engine: { type: 'simulator', ttft_ms: 0, itl_ms: 20 } as CatalogEntry['engine'],
    };
    const lag: CatalogEntry = {
      ...chatA,
      id: 'chat-lag',
      rank: 3,
      engine: { type: 'simulator', ttft_ms: opts.lagMs ?? 1, itl_ms: 0 } as CatalogEntry['engine'],
    };
    await new CatalogRepository(db.prisma).syncEntries([
      ...entries,
      CatalogEntrySchema.parse(up),
      CatalogEntrySchema.parse(slow),
      ...(opts.lagMs ? [CatalogEntrySchema.parse(lag)] : []),
    ]);
    const huge = 1_000_000_000;
    const models = Object.fromEntries(
      ['chat-A', 'chat-up', 'chat-slow', ...(opts.lagMs ? ['chat-lag'] : [])].map((m) => [
        m,
        { tokens_per_minute: huge, allowance_tokens: huge },
      ]),
    );
    await db.keys.setLimits(db.keyId, { key: { requests_per_minute: huge, concurrent: huge }, models });
    const limited = await db.keys.mint(db.memberId, 'bench-limited');
    await db.keys.setLimits(limited.record.id, { key: { requests_per_minute: 1 } });

    const common = {
      NATS_URL,
      REDIS_URL,
      DATABASE_URL: db.databaseUrl,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    };
    const chat = await spawnProc(
      'chat-service',
      ['bench/stack/chat-service.mjs'],
      { ...imageEnv('chat-service'), ...common, BENCH_SUBJECT_PREFIX: subjectPrefix },
      (o) => o.includes('ready'),
    );
    procs.push(chat);
    const gwEnv = {
      ...common,
      HOST: '127.0.0.1',
      ALLOW_INSECURE_HTTP: '1',
      MODEL_SUBJECT_PREFIX: subjectPrefix,
      USAGE_STREAM: usageStream,
      USAGE_SUBJECT_ROOT: usageRoot,
      LIMITS_REDIS_PREFIX: limitsPrefix,
    };
    const gatewayImageEnv = imageEnv('gateway');
    // A memory cgroup of the pod's limit for one process (opts.memoryLimitMiB), removed at the end.
    const limitedCgroup = (name: string) => {
      if (!opts.memoryLimitMiB) return undefined;
      const cgroup = memoryCgroup(`bench-${run}-${name}`, opts.memoryLimitMiB);
      cgroups.push(cgroup);
      return cgroup;
    };
    const startGateway = async (name: string, limits: boolean, nodeArgs: string[], pin?: number) => {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const cgroup = limitedCgroup(limits ? 'on' : 'off');
      const p = await spawnProc(
        name,
        [...nodeArgs, 'apps/gateway/dist/main.js'],
        { ...gatewayImageEnv, ...gwEnv, PORT: String(port), LIMITS_ENABLED: limits ? '1' : '0' },
        async () => (await fetch(`${url}/readyz`)).status === 200,
        pin,
        cgroup?.dir,
      );
      procs.push(p);
      return { ...p, url };
    };
    const gatewayFlags = opts.gatewayFlags ?? imageNodeFlags('gateway');
    const sseFloor = await spawnProc(
      'sse-floor',
      [...gatewayFlags, 'bench/stack/sse-floor.mjs'],
      gatewayImageEnv,
      (o) => listeningPort(o) !== null,
      undefined,
      limitedCgroup('floor')?.dir,
    );
    procs.push(sseFloor);
    const gatewayOn = await startGateway(
      'gateway (limits on)',
      true,
      [...gatewayFlags, ...(opts.gatewayOnNodeArgs ?? [])],
      opts.pin ? 0 : undefined,
    );
    const gatewayOff =
      opts.withGatewayOff === false
        ? { ...gatewayOn }
        : await startGateway('gateway (limits off)', false, gatewayFlags, opts.pin ? 1 : undefined);
    // The ledger writer after the gateway, which creates the usage stream.
    const ledger = await spawnProc(
      'ledger-writer',
      ['apps/ledger-writer/dist/main.js'],
      {
        ...imageEnv('ledger-writer'),
        ...common,
        LEDGER_STREAM: usageStream,
        LEDGER_SUBJECTS: `${usageRoot}.>`,
        LEDGER_CONSUMER: `bench_${run}`,
      },
      async () => {
        await new Promise((r) => setTimeout(r, 500));
        return true;
      },
    );
    procs.push(ledger);
    return {
      upstream: { ...upstream, url: upstreamUrl },
      rawProxy: { ...rawProxy, url: rawUrl },
      chat,
      ledger,
      gatewayOn,
      gatewayOff,
      sseFloor: { ...sseFloor, url: `http://127.0.0.1:${listeningPort(sseFloor.output())}` },
      natsPid: serverPid('nats-server'),
      redisPid: serverPid('redis-server'),
      gatewayOnFlags: gatewayFlags,
      db,
      key: db.key,
      limitedKey: limited.key,
      close: cleanup,
    };
  } catch (e) {
    await cleanup().catch(() => undefined);
    throw e;
  }
}

/** Resident set size of a process (KiB), from /proc/<pid>/status. */
export function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/** `taskset` on every thread of a process; returns its previous mask (hex, as taskset prints it). */
export function setCpus(pid: number, cpus: string): string {
  const before = /: ([0-9a-f]+)\s*$/.exec(
    execFileSync('taskset', ['-p', String(pid)], { encoding: 'utf8' }),
  )?.[1];
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
  return before ?? 'ffffffff';
}

/**
 * bench/stack.ts `--isolate`, bench/stages.ts: the measured processes (raw proxy, both gateways) on CPU 0,
 * the rest (upstream, services, NATS, Redis, this process and the load generators it starts) on CPU 1;
 * returns what gives NATS and Redis their CPU masks back.
 */
export function isolateTargets(stack: Stack): () => void {
  for (const p of [stack.rawProxy, stack.gatewayOn, stack.gatewayOff]) setCpus(p.pid, '0');
  for (const p of [stack.upstream, stack.chat, stack.ledger]) setCpus(p.pid, '1');
  setCpus(process.pid, '1');
  const shared = [stack.natsPid, stack.redisPid].filter((p): p is number => p !== null);
  const masks = shared.map((pid) => [pid, setCpus(pid, '1')] as const);
  console.log(
    'isolated: raw proxy and gateways on CPU 0; upstream, services, NATS, Redis, load generator on CPU 1',
  );
  return () => {
    for (const [pid, mask] of masks) {
      try {
        execFileSync('taskset', ['-a', '-p', mask, String(pid)], { stdio: 'ignore' });
      } catch {
        // the server went away meanwhile
      }
    }
  };
}
