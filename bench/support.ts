/** What the benchmarks share: a free port, percentiles, and a fresh database with one inference key. */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import {
  ApiKeysRepository,
  CatalogRepository,
  createPrisma,
  dropDatabase,
  ensureDatabase,
  MembersRepository,
  migrateDeploy,
} from '@infer/persistence';
import { connectNats } from '@infer/rpc';
import { jetstreamManager } from '@nats-io/jetstream';

export const PG_ROOT = process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** The p-th percentile (0-100) of `xs`. */
export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

export interface BenchDatabase {
  databaseUrl: string;
  prisma: ReturnType<typeof createPrisma>;
  /** An API key of an inference-tier member, and its record id. */
  key: string;
  keyId: string;
  memberId: string;
  keys: ApiKeysRepository;
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database with the default catalog and one inference-tier member and key.
 * With `keepName` the database has that name, is reused (migrated again) when it exists and is not
 * dropped by `drop()`: a long seeding can then be done once and timed many times.
 */
export async function createBenchDatabase(keepName?: string): Promise<BenchDatabase> {
  const databaseUrl = `${PG_ROOT}/${keepName ?? `infer_bench_${randomBytes(4).toString('hex')}`}`;
  await ensureDatabase(databaseUrl);
  await migrateDeploy(databaseUrl);
  const prisma = createPrisma(databaseUrl);
  await new CatalogRepository(prisma).syncFromFile('config/models.yaml');
  const member = await new MembersRepository(prisma).create({ name: 'bench', tier: 'inference' });
  const keys = new ApiKeysRepository(prisma);
  const { key, record } = await keys.mint(member.id, 'bench');
  return {
    databaseUrl,
    prisma,
    key,
    keyId: record.id,
    memberId: member.id,
    keys,
    drop: async () => {
      await prisma.$disconnect().catch(() => undefined);
      if (!keepName) await dropDatabase(databaseUrl).catch(() => undefined);
    },
  };
}

const CLK_TCK = 100; // Linux USER_HZ

/** CPU time (user + system) a process has used, from /proc (ms, 10 ms resolution). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)) -> 11, 12 here.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/** System (kernel) CPU time a process has used, from /proc (ms, 10 ms resolution). */
export function sysMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[12]) * 1000) / CLK_TCK;
}

/**
 * Write system calls a process made so far (`syscw` of /proc/<pid>/io: write, writev and the like, every
 * thread): with the answers counted, the socket writes per request. null when not readable.
 */
export function writeCalls(pid: number): number | null {
  try {
    const m = /syscw:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Read system calls a process made so far (`syscr` of /proc/<pid>/io: read, recvmsg and the like, every
 * thread). null when not readable.
 */
export function readCalls(pid: number): number | null {
  try {
    const m = /syscr:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Voluntary context switches of a process's main thread so far (`/proc/<pid>/status`): each one is its
 * event loop going to sleep with nothing to do, so between two readings, the times it woke up again.
 */
export function wakeups(pid: number): number | null {
  return statusField(pid, 'voluntary_ctxt_switches');
}

/** Involuntary context switches of a process's main thread so far: the times it was preempted. */
export function preemptions(pid: number): number | null {
  return statusField(pid, 'nonvoluntary_ctxt_switches');
}

function statusField(pid: number, name: string): number | null {
  try {
    const m = new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Bytes a process read and wrote so far through system calls (`rchar` / `wchar`: sockets included). */
export function ioBytes(pid: number): { read: number; written: number } | null {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const r = /rchar:\s+(\d+)/.exec(io);
    const w = /wchar:\s+(\d+)/.exec(io);
    return r && w ? { read: Number(r[1]), written: Number(w[1]) } : null;
  } catch {
    return null;
  }
}

/**
 * The gateway from its main.ts in a process of its own on a free port, once /readyz answers 200.
 * `nodeFlags` go before main.ts (preloads, profiling); `stdout: 'pipe'` keeps its stdout readable;
 * `ipc` opens a message channel to it; `name` labels the errors; `cwd`: another checkout's tree to run
 * (its own apps/, libs/, tools/ and a node_modules/ whose @infer links point into it).
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  {
    nodeFlags = [],
    stdout = 'ignore',
    ipc = false,
    name = 'gateway',
    cwd,
  }: {
    nodeFlags?: string[];
    /** or a file descriptor to write it to */
    stdout?: 'ignore' | 'pipe' | number;
    ipc?: boolean;
    name?: string;
    cwd?: string;
  } = {},
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  // Usage events go to a stream of the bench's own (deleted when the gateway exits), never to the
  // development stack's USAGE stream, whose ledger writer would put them in its database.
  const usage: { USAGE_STREAM?: string; USAGE_SUBJECT_ROOT?: string } = env.USAGE_STREAM
    ? {}
    : (() => {
        const run = randomBytes(4).toString('hex');
        return { USAGE_STREAM: `BENCH_USAGE_${run}`, USAGE_SUBJECT_ROOT: `bench_${run}.usage` };
      })();
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', './tools/ts-register.js', ...nodeFlags, 'apps/gateway/src/main.ts'],
    {
      env: {
        ...process.env,
        ...usage,
        ...env,
        HOST: '127.0.0.1',
        PORT: String(port),
        ALLOW_INSECURE_HTTP: '1',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', stdout, 'inherit', ...(ipc ? (['ipc'] as const) : [])],
      cwd,
    },
  );
  const own = usage.USAGE_STREAM;
  if (own) child.once('exit', () => void dropStream(own));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} not ready within 60 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, url };
}

export interface Round {
  mode: string;
  concurrency: number;
  ok: number;
  failed: number;
  wallMs: number;
  cpuMs: number;
  latencies: number[];
}

/** `n` non-streamed chat-A requests (max_tokens 1) with `concurrency` in flight: latencies and the CPU `pid` used. */
export async function round(
  mode: string,
  url: string,
  pid: number,
  key: string,
  n: number,
  concurrency: number,
): Promise<Round> {
  const body = JSON.stringify({
    model: 'chat-A',
    messages: [{ role: 'user', content: 'Hello there' }],
    max_tokens: 1,
  });
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let next = 0;
  const cpu0 = cpuMs(pid);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const s = performance.now();
        try {
          const res = await fetch(`${url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body,
            signal: AbortSignal.timeout(30_000),
          });
          await res.arrayBuffer();
          if (res.status === 200) ok++;
          else failed++;
        } catch {
          failed++;
        }
        latencies.push(performance.now() - s);
      }
    }),
  );
  return {
    mode,
    concurrency,
    ok,
    failed,
    wallMs: performance.now() - t0,
    cpuMs: cpuMs(pid) - cpu0,
    latencies,
  };
}

/** Deletes a bench's own JetStream stream (best effort: NATS may be gone). */
async function dropStream(name: string): Promise<void> {
  try {
    const nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'bench-cleanup');
    await (await jetstreamManager(nc)).streams.delete(name).catch(() => undefined);
    await nc.close();
  } catch {
    // nothing to clean, or nobody to ask
  }
}
