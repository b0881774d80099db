// The gateway side by side with a raw proxy, in one run, on the production build (issue 13).
//
//   node --conditions=source --import ./tools/ts-register.js bench/stack.ts
//   node ... bench/stack.ts --duration 5 --rounds 3 --connections 32 --streams 200 \
//        --concurrent-streams 1000 --error-seconds 15 [--soak 600 --rate 1000] [--pin] [--no-build] [--quick]
//        [--cpu-rate 300] [--rss] [--gateway-flags="<node flags>"] [--gc] [--lag-ms 1] [--memory-limit pod]
//
// Starts (bench/stack/lib.ts) a fake upstream (a test double answering at once), a raw node:http proxy
// in front of it (the baseline), and the production build of the stack (NODE_ENV=production, dist/):
// chat-service, ledger-writer, a gateway with limits on and one with limits off, on private ports,
// NATS subjects, usage stream and Redis prefix. Then, with wrk when installed (bench/stack/wrk.ts) or
// autocannon (`--loadgen`; fixed rates always autocannon), bounded in time, keep-alive, `--connections`
// in flight, alternating targets each round:
//
//   raw proxy          POST /v1/chat/completions through the raw proxy to the upstream
//   gw off, upstream   the gateway, limits off, model chat-up (chat-service's openai engine -> upstream)
//   gw on, upstream    the same, limits on (auth, every limit in Redis, NATS hop, usage event)
//   gw on, simulator   limits on, model chat-A (the simulator engine, max_tokens 1)
//   gw on, 429         a key allowed 1 request a minute: refused by the limits
//   gw on, upstream, messages / gw on, simulator, messages
//                      the same two paths through the Anthropic Messages front door (POST /v1/messages,
//                      the same prompt and output cap): its translation's cost beside the chat rows
//
// For each: req/s, p50/p99 latency, and the CPU time per request of every process (user + system from
// /proc/<pid>/stat over the round; the load generator's too) and its write system calls per request
// (/proc/<pid>/io), the median over the rounds; the gateway/raw-proxy CPU ratio. Then
// p50/p99 at a fixed 1,000 req/s, the time to the first byte of streams one at a time (upstream
// direct, raw proxy, gateway), and the gateway's RSS: idle, after the load, during and after
// `--concurrent-streams` long streams at once (chat-slow, 20 ms per token), and after
// `--error-seconds` of 503s (embeddings: no embedding-service runs). `--soak N` adds N seconds at
// `--rate` req/s with the gateway's RSS sampled every 10 s. Numbers, not pass/fail; everything stops
// by itself. The machine is shared: rely on the same-run ratios and CPU per request, and repeat runs.
// `--rss`: only the memory part. The gateways run with their image's node flags (lib.ts imageNodeFlags);
// `--gateway-flags` replaces them. Each gateway runs in a memory cgroup of its pod's limit
// (`--memory-limit`, default `pod`: k8s/base/gateway.yaml's 1 GiB), since Node sizes V8's heap from it.
// Per request it also prints, for the limits-on gateway and chat-service, the socket writes, reads,
// event-loop wake-ups, preemptions and bytes in/out; `--gc` adds the gateway's promoted bytes and GC
// pauses (`--trace-gc-nvp`), also for the 503 burst; `--lag-ms N` a target on the simulator answering
// after N ms (the upstream path's timing without its work).
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import {
  buildProduction,
  chatBody,
  isolateTargets,
  messagesBody,
  resolveMemoryLimitMiB,
  rssKiB,
  type Stack,
  startStack,
  timedStream,
} from './stack/lib.js';
import { hasWrk, runWrk, type WrkResult } from './stack/wrk.js';
import { cpuMs, ioBytes, pct, preemptions, readCalls, sysMs, wakeups, writeCalls } from './support.js';

const { values: opt } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '32' },
    streams: { type: 'string', default: '200' },
    'concurrent-streams': { type: 'string', default: '1000' },
    /**
     * Milliseconds between one stream's end and the next one's start (default 0: back to back, so each
     * request meets the previous one's settlement, usage event and ledger write).
     */
    'stream-gap': { type: 'string', default: '0' },
    'error-seconds': { type: 'string', default: '15' },
    soak: { type: 'string', default: '0' },
    rate: { type: 'string', default: '1000' },
    pin: { type: 'boolean', default: false },
    /**
     * Each gateway in its own memory cgroup of this many MiB; `pod` (the default): the limit of its pod in
     * k8s/base/gateway.yaml (1 GiB). Node sizes V8's heap, and with it the young generation, from that
     * limit, as in the pod; without it V8 sizes them from this machine's 24 GiB (a 4x larger young
     * generation). `none`: no cgroup. Where no memory cgroup is writable, `pod` falls back to none.
     */
    'memory-limit': { type: 'string', default: 'pod' },
    'no-build': { type: 'boolean', default: false },
    /** Only the throughput rounds and the ratios (for re-measuring one change quickly). */
    quick: { type: 'boolean', default: false },
    /**
     * Only these parts, comma-separated: throughput, fixed, streams, concurrent, errors (and soak when
     * `--soak` is set). E.g. `--only streams,fixed` re-measures the latency goals in a minute.
     */
    only: { type: 'string', default: '' },
    /**
     * Drive the throughput rounds at this fixed total rate (req/s) instead of a closed loop: on a busy
     * shared machine the CPU per request is then compared at the same load from run to run.
     */
    'cpu-rate': { type: 'string', default: '0' },
    /**
     * Closed-loop load generator: wrk (C, one thread; far less CPU per request) when installed, else
     * autocannon (in this process). Fixed-rate runs always use autocannon.
     */
    loadgen: { type: 'string', default: '' },
    /** Only the memory figures: idle RSS, the concurrent streams, the 503 burst and `--soak`. */
    rss: { type: 'boolean', default: false },
    /** Node flags of both gateways instead of their image's (docker/gateway.Dockerfile CMD), e.g. "" or "--max-semi-space-size=4". */
    'gateway-flags': { type: 'string' },
    /** Target order of the throughput rounds, as indices of the default list (raw proxy, gw off upstream, gw on upstream, gw on simulator, gw on 429, extras). */
    order: { type: 'string' },
    /**
     * The limits-on gateway with `--trace-gc-nvp` (one line per collection on its stdout): per target and
     * for the 503 burst, the bytes its scavenges promoted to the old generation, its GC pauses and its
     * collections, per request.
     */
    gc: { type: 'boolean', default: false },
    /**
     * Adds a target "gw on, sim +N ms": limits on, model chat-lag (the simulator answering after N ms,
     * max_tokens 1): the simulator's work with a reply as late as the upstream's, to tell what the
     * upstream path costs the gateway through timing alone.
     */
    'lag-ms': { type: 'string', default: '0' },
    /**
     * Adds a target "gw on, simulator, burn F": the simulator target while another process keeps F of
     * one core busy (e.g. 0.4: what chat-service, the upstream and NATS spend in addition on the upstream
     * path): what contention alone does to the gateway's CPU per request.
     */
    burn: { type: 'string', default: '0' },
    /**
     * Adds a target "gw on, simulator + side load": the simulator target while the raw proxy -> upstream
     * path is driven at the same rate beside it (needs --cpu-rate). The machine then carries about what
     * the upstream path adds (chat-service's upstream calls, the upstream's answers: ~170 us of CPU per
     * request in other processes) while the gateway does the simulator target's work.
     */
    'side-load': { type: 'boolean', default: false },
    /**
     * The measured processes (raw proxy, both gateways) alone on CPU 0, everything else (upstream,
     * chat-service, ledger writer, NATS, Redis, this process and its load generator) on CPU 1: each
     * target's own cost without being preempted by the processes its requests wake (the issue's
     * measurement pinned the gateway to one core). NATS and Redis get their CPU masks back at the end.
     */
    isolate: { type: 'boolean', default: false },
    /**
     * Seconds of load per target before the rounds. The gateway's optimizing compiler is still busy
     * after 2 s (~10,000 requests: 15 % of its CPU in a perf recording, none after 30 s), while the raw
     * proxy has had 50,000 by then: a short warm-up charges the gateway its JIT work (bench/results/data-path-issue-13.md,
     * "Isolated targets and the warm-up"). 10 s is 50,000 gateway requests.
     */
    warmup: { type: 'string', default: '10' },
  },
});
const LOADGEN = opt.loadgen || (hasWrk() ? 'wrk' : 'autocannon');
if (LOADGEN !== 'wrk' && LOADGEN !== 'autocannon')
  throw new Error(`--loadgen wrk|autocannon, not ${LOADGEN}`);
if (LOADGEN === 'wrk' && !hasWrk())
  throw new Error('--loadgen wrk: no wrk on the PATH (apt-get install wrk)');
const DURATION = Number(opt.duration);
const ROUNDS = Number(opt.rounds);
const CONNECTIONS = Number(opt.connections);
const STREAMS = Number(opt.streams);
const STREAM_GAP_MS = Number(opt['stream-gap']);
const CONCURRENT_STREAMS = Number(opt['concurrent-streams']);
const ERROR_SECONDS = Number(opt['error-seconds']);
const SOAK = Number(opt.soak);
const RATE = Number(opt.rate);
const LAG_MS = Number(opt['lag-ms']);
const BURN = Number(opt.burn);
const PARTS = new Set(
  opt.only
    ? opt.only.split(',').map((p) => p.trim())
    : opt.rss
      ? ['concurrent', 'errors', 'soak']
      : ['throughput', 'fixed', 'streams', 'concurrent', 'errors', 'soak'],
);
const part = (name: string) => PARTS.has(name);

interface Target {
  name: string;
  url: string;
  path: string;
  key?: string;
  body: string;
  /** A process spinning this share of one core while the target is driven (`--burn`). */
  burn?: number;
  /** Another target driven at the same time and rate (its answers are not counted): `--side-load`. */
  side?: Target;
}

/**
 * A process that keeps this share of one core busy (spins 2*share ms, sleeps the rest of each 2 ms):
 * other work on the machine, to see what contention alone does to a process's CPU per request.
 */
function startBurner(share: number): ChildProcess {
  const code = `const b=new Int32Array(new SharedArrayBuffer(4));for(;;){const t=performance.now();while(performance.now()-t<${2 * share}){}Atomics.wait(b,0,0,${2 * (1 - share)})}`;
  return spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
}

interface Sample {
  target: string;
  reqPerS: number;
  p50: number;
  p99: number;
  responses: number;
  non2xx: number;
  errors: number;
  /** CPU microseconds per response, by process name. */
  cpu: Record<string, number>;
  /** Write system calls (socket writes) per response, by process name (absent when unreadable). */
  writes: Record<string, number>;
  /** Read system calls per response, by process name (absent when unreadable). */
  reads: Record<string, number>;
  /** Event-loop wake-ups (voluntary context switches of the main thread) per response, by process name. */
  wakes: Record<string, number>;
  /** Preemptions (involuntary context switches of the main thread) per response, by process name. */
  preempts: Record<string, number>;
  /** Bytes read / written through system calls per response, by process name. */
  bytesIn: Record<string, number>;
  bytesOut: Record<string, number>;
  /** System (kernel) CPU microseconds per response, by process name. */
  sys: Record<string, number>;
  /** The limits-on gateway's collections over the round (`--gc`), per response. */
  gc?: GcPerRequest;
}

/** Totals of the collections `--trace-gc-nvp` reported so far. */
interface GcTotals {
  scavenges: number;
  fullGcs: number;
  promoted: number;
  /** Of `promoted`, what full collections moved out of the young generation (their `promoted` field). */
  promotedByFull: number;
  pauseMs: number;
  /** Full collections by V8's reason ('allocation failure', 'testing' for a gc() call ...). */
  fullReasons: Record<string, number>;
}
interface GcPerRequest {
  promotedBytes: number;
  /** Of promotedBytes, the part full collections promoted. */
  promotedByFullBytes: number;
  /** Full collections in the round, by reason. */
  fullReasons: Record<string, number>;
  pauseUs: number;
  scavengesPer1k: number;
  fullGcsPer1k: number;
}
const gcTotals: GcTotals = {
  scavenges: 0,
  fullGcs: 0,
  promoted: 0,
  promotedByFull: 0,
  pauseMs: 0,
  fullReasons: {},
};

/**
 * `--gc`: every `GC: {...}` line of the limits-on gateway, with `# start <target>` / `# end <target>`
 * markers around each measured run, in var/bench/gc-trace-<bench pid>.jsonl (the path is printed).
 */
let gcLog: WriteStream | null = null;
const gcMark = (what: string) => gcLog?.write(`# ${what} ${Date.now()}\n`);

/** Sums the `GC: {...}` lines of `--trace-gc-nvp` that a process prints on its stdout. */
function followGcTrace(out: NodeJS.ReadableStream): void {
  mkdirSync('var/bench', { recursive: true });
  const path = `var/bench/gc-trace-${process.pid}.jsonl`;
  gcLog = createWriteStream(path);
  console.log(`gateway (limits on) GC trace: ${path}`);
  let rest = '';
  out.on('data', (d: Buffer) => {
    const lines = (rest + d.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const at = line.indexOf('GC: {');
      if (at < 0) continue;
      gcLog?.write(`${line.slice(at + 4)}\n`);
      try {
        const g = JSON.parse(line.slice(at + 4)) as {
          gc?: string;
          promoted?: number;
          pause?: number;
          reason?: string;
        };
        if (g.gc === 's') gcTotals.scavenges++;
        else if (g.gc === 'mc' || g.gc === 'mmc') {
          // A full collection's `promoted` is the young generation's live objects it moved to the old one.
          gcTotals.fullGcs++;
          gcTotals.promotedByFull += g.promoted ?? 0;
          const reason = g.reason || '?';
          gcTotals.fullReasons[reason] = (gcTotals.fullReasons[reason] ?? 0) + 1;
        }
        gcTotals.promoted += g.promoted ?? 0;
        gcTotals.pauseMs += g.pause ?? 0;
      } catch {
        // a line cut by another writer: not counted
      }
    }
  });
}

function gcSince(before: GcTotals, responses: number): GcPerRequest {
  const n = Math.max(1, responses);
  return {
    promotedBytes: (gcTotals.promoted - before.promoted) / n,
    promotedByFullBytes: (gcTotals.promotedByFull - before.promotedByFull) / n,
    fullReasons: Object.fromEntries(
      Object.entries(gcTotals.fullReasons)
        .map(([r, c]) => [r, c - (before.fullReasons[r] ?? 0)] as const)
        .filter(([, c]) => c > 0),
    ),
    pauseUs: ((gcTotals.pauseMs - before.pauseMs) * 1000) / n,
    scavengesPer1k: ((gcTotals.scavenges - before.scavenges) * 1000) / n,
    fullGcsPer1k: ((gcTotals.fullGcs - before.fullGcs) * 1000) / n,
  };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : 0;
};

function processes(stack: Stack): Array<{ name: string; pid: number }> {
  const list: Array<{ name: string; pid: number }> = [
    { name: 'gw on', pid: stack.gatewayOn.pid },
    { name: 'gw off', pid: stack.gatewayOff.pid },
    { name: 'chat-svc', pid: stack.chat.pid },
    { name: 'ledger', pid: stack.ledger.pid },
    { name: 'raw proxy', pid: stack.rawProxy.pid },
    { name: 'upstream', pid: stack.upstream.pid },
  ];
  if (stack.natsPid) list.push({ name: 'nats*', pid: stack.natsPid });
  if (stack.redisPid) list.push({ name: 'redis*', pid: stack.redisPid });
  return list;
}

async function load(
  stack: Stack,
  t: Target,
  seconds: number,
  extra: { connections?: number; overallRate?: number } = {},
): Promise<Sample> {
  const burner = t.burn ? startBurner(t.burn) : null;
  try {
    const t0 = performance.now();
    const sample = await measure(stack, t, seconds, extra);
    if (burner?.pid) {
      const share = cpuMs(burner.pid) / (performance.now() - t0);
      console.log(`  (${t.name}: the burner used ${(share * 100).toFixed(0)} % of a core)`);
    }
    return sample;
  } finally {
    burner?.kill('SIGKILL');
  }
}

async function measure(
  stack: Stack,
  t: Target,
  seconds: number,
  extra: { connections?: number; overallRate?: number },
): Promise<Sample> {
  const procs = processes(stack);
  const before = procs.map((p) => cpuMs(p.pid));
  const writesBefore = procs.map((p) => writeCalls(p.pid));
  const readsBefore = procs.map((p) => readCalls(p.pid));
  const wakesBefore = procs.map((p) => wakeups(p.pid));
  const preemptsBefore = procs.map((p) => preemptions(p.pid));
  const bytesBefore = procs.map((p) => ioBytes(p.pid));
  const gcBefore = { ...gcTotals, fullReasons: { ...gcTotals.fullReasons } };
  gcMark(`start ${t.name}`);
  const headers = {
    'content-type': 'application/json',
    ...(t.key ? { authorization: `Bearer ${t.key}` } : {}),
  };
  const connections = extra.connections ?? CONNECTIONS;
  // wrk for closed loops when installed (it has no fixed-rate mode); autocannon otherwise.
  const viaWrk = LOADGEN === 'wrk' && !extra.overallRate;
  const selfBefore = cpuMs(process.pid);
  const sysBefore = procs.map((p) => sysMs(p.pid));
  const side = t.side
    ? autocannon({
        url: `${t.side.url}${t.side.path}`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: t.side.body,
        connections,
        duration: seconds,
        timeout: 30,
        ...(extra.overallRate ? { overallRate: extra.overallRate } : {}),
      })
    : null;
  let r: Omit<WrkResult, 'cpuMs'>;
  let loadgenMs: number;
  if (viaWrk) {
    const w = await runWrk({ url: `${t.url}${t.path}`, headers, body: t.body, connections, seconds });
    r = w;
    loadgenMs = w.cpuMs;
  } else {
    const a = await autocannon({
      url: `${t.url}${t.path}`,
      method: 'POST',
      headers,
      body: t.body,
      connections,
      duration: seconds,
      timeout: 30,
      ...(extra.overallRate ? { overallRate: extra.overallRate } : {}),
    });
    r = {
      responses: Object.values(a.statusCodeStats).reduce((s, c) => s + Number(c.count), 0),
      durationS: a.duration,
      p50: a.latency.p50,
      p99: a.latency.p99,
      non2xx: a.non2xx,
      errors: a.errors,
    };
    // autocannon runs in this process: its CPU is this process's over the run.
    loadgenMs = cpuMs(process.pid) - selfBefore;
  }
  await side;
  const after = procs.map((p) => cpuMs(p.pid));
  const sysAfter = procs.map((p) => sysMs(p.pid));
  const writesAfter = procs.map((p) => writeCalls(p.pid));
  const readsAfter = procs.map((p) => readCalls(p.pid));
  const wakesAfter = procs.map((p) => wakeups(p.pid));
  const preemptsAfter = procs.map((p) => preemptions(p.pid));
  const bytesAfter = procs.map((p) => ioBytes(p.pid));
  const responses = r.responses;
  const cpu: Record<string, number> = { [viaWrk ? 'wrk' : 'autocannon']: 0 };
  const writes: Record<string, number> = {};
  const reads: Record<string, number> = {};
  const wakes: Record<string, number> = {};
  const preempts: Record<string, number> = {};
  const bytesIn: Record<string, number> = {};
  const bytesOut: Record<string, number> = {};
  const sys: Record<string, number> = {};
  const perResponse = (into: Record<string, number>, name: string, a: number | null, b: number | null) => {
    if (a != null && b != null) into[name] = responses ? (b - a) / responses : 0;
  };
  procs.forEach((p, i) => {
    cpu[p.name] = responses ? ((after[i]! - before[i]!) * 1000) / responses : 0;
    perResponse(writes, p.name, writesBefore[i] ?? null, writesAfter[i] ?? null);
    perResponse(reads, p.name, readsBefore[i] ?? null, readsAfter[i] ?? null);
    perResponse(wakes, p.name, wakesBefore[i] ?? null, wakesAfter[i] ?? null);
    perResponse(preempts, p.name, preemptsBefore[i] ?? null, preemptsAfter[i] ?? null);
    perResponse(bytesIn, p.name, bytesBefore[i]?.read ?? null, bytesAfter[i]?.read ?? null);
    perResponse(bytesOut, p.name, bytesBefore[i]?.written ?? null, bytesAfter[i]?.written ?? null);
    perResponse(sys, p.name, (sysBefore[i] ?? 0) * 1000, (sysAfter[i] ?? 0) * 1000);
  });
  cpu[viaWrk ? 'wrk' : 'autocannon'] = responses ? (loadgenMs * 1000) / responses : 0;
  gcMark(`end ${t.name} ${responses}`);
  return {
    target: t.name,
    reqPerS: responses / r.durationS,
    p50: r.p50,
    p99: r.p99,
    responses,
    non2xx: r.non2xx,
    errors: r.errors,
    cpu,
    writes,
    reads,
    wakes,
    preempts,
    bytesIn,
    bytesOut,
    sys,
    ...(opt.gc ? { gc: gcSince(gcBefore, responses) } : {}),
  };
}

/** The samples of each target, in the order of the rounds (targets in the order first measured). */
function byTarget(samples: Sample[]): Map<string, Sample[]> {
  const out = new Map<string, Sample[]>();
  for (const s of samples) {
    const ss = out.get(s.target);
    if (ss) ss.push(s);
    else out.set(s.target, [s]);
  }
  return out;
}

/**
 * Per request, median of rounds, for the gateways and chat-service: socket writes, reads and event-loop
 * wake-ups (what separates two targets whose own work per request is the same), and with `--gc` the
 * limits-on gateway's collections.
 */
function summarizeTurns(samples: Sample[]): Record<string, string>[] {
  const m = (xs: Array<number | undefined>, digits = 2) => {
    const ys = xs.filter((x): x is number => x !== undefined);
    return ys.length ? median(ys).toFixed(digits) : '-';
  };
  return [...byTarget(samples)].map(([target, ss]) => {
    const row: Record<string, string> = { target };
    row['gw on user/sys us'] = [
      m(
        ss.map((s) => (s.cpu['gw on'] ?? 0) - (s.sys['gw on'] ?? 0)),
        0,
      ),
      m(
        ss.map((s) => s.sys['gw on']),
        0,
      ),
    ].join(' / ');
    for (const p of ['gw on', 'chat-svc']) {
      row[`${p} w/r/wake/preempt`] = [
        m(ss.map((s) => s.writes[p])),
        m(ss.map((s) => s.reads[p])),
        m(ss.map((s) => s.wakes[p])),
        m(ss.map((s) => s.preempts[p])),
      ].join(' / ');
      row[`${p} B in/out`] = [
        m(
          ss.map((s) => s.bytesIn[p]),
          0,
        ),
        m(
          ss.map((s) => s.bytesOut[p]),
          0,
        ),
      ].join(' / ');
    }
    if (opt.gc) {
      row['gw on promoted B'] = m(
        ss.map((s) => s.gc?.promotedBytes),
        0,
      );
      row['gw on GC pause us'] = m(
        ss.map((s) => s.gc?.pauseUs),
        1,
      );
      row['scavenges /1k'] = m(ss.map((s) => s.gc?.scavengesPer1k));
    }
    return row;
  });
}

/**
 * `--gc`, per target: each round's bytes promoted per request (scavenges + full collections) and its full
 * collections by V8's reason. A full collection's "promoted" is the young generation's live objects it
 * moved, so a round with one counts megabytes that no scavenge promoted.
 */
function summarizeGc(samples: Sample[]): Record<string, string>[] {
  return [...byTarget(samples)].map(([target, ss]) => ({
    target,
    'promoted B per round (scavenges + full GCs)': ss
      .map((s) => {
        const g = s.gc;
        if (!g) return '-';
        return `${(g.promotedBytes - g.promotedByFullBytes).toFixed(0)} + ${g.promotedByFullBytes.toFixed(0)}`;
      })
      .join(' | '),
    'full GCs per round (reason)': ss
      .map(
        (s) =>
          Object.entries(s.gc?.fullReasons ?? {})
            .map(([r, c]) => `${c} ${r}`)
            .join(', ') || '0',
      )
      .join(' | '),
  }));
}

/** Write system calls per request of each process (median of rounds): the socket writes a request costs. */
function summarizeWrites(samples: Sample[], procNames: string[]): Record<string, string>[] {
  return [...byTarget(samples)].map(([target, ss]) => {
    const row: Record<string, string> = { target };
    for (const p of procNames) {
      const xs = ss.map((s) => s.writes[p]).filter((x): x is number => x !== undefined);
      row[p] = xs.length ? median(xs).toFixed(2) : '-';
    }
    return row;
  });
}

function summarize(samples: Sample[], procNames: string[]): Record<string, string | number>[] {
  return [...byTarget(samples)].map(([target, ss]) => {
    const row: Record<string, string | number> = {
      target,
      'req/s': median(ss.map((s) => s.reqPerS)).toFixed(0),
      'p50 ms': median(ss.map((s) => s.p50)).toFixed(1),
      'p99 ms': median(ss.map((s) => s.p99)).toFixed(1),
      'non-2xx': ss.reduce((a, s) => a + s.non2xx + s.errors, 0),
    };
    for (const p of procNames) row[`${p} us`] = median(ss.map((s) => s.cpu[p] ?? 0)).toFixed(0);
    return row;
  });
}

/**
 * An open-loop load at `rate` req/s sent at even intervals (request i is due at start + i/rate), on a
 * pool of `connections` keep-alive connections. Each latency runs from the moment the request was due
 * to the end of its answer, so a request that waited for a free connection or a late tick counts its
 * wait (no coordinated omission). Written here because autocannon's rate mode sends each connection's
 * share of a second in one burst (see the fixed-rate part) and wrk2 is not installed on this machine.
 */
async function paced(
  t: Target,
  rate: number,
  seconds: number,
  connections: number,
): Promise<{
  reqPerS: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}> {
  const pool = new Pool(t.url, { connections, pipelining: 1 });
  const headers = {
    'content-type': 'application/json',
    ...(t.key ? { authorization: `Bearer ${t.key}` } : {}),
  };
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const pending = new Set<Promise<void>>();
  const one = async (due: number) => {
    try {
      const res = await pool.request({ path: t.path, method: 'POST', headers, body: t.body });
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode > 299) non2xx++;
      latencies.push(performance.now() - due);
    } catch {
      errors++;
    }
  };
  const total = Math.round(rate * seconds);
  const start = performance.now() + 5;
  let sent = 0;
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + (sent * 1000) / rate <= now) {
        const p = one(start + (sent * 1000) / rate);
        pending.add(p);
        void p.finally(() => pending.delete(p));
        sent++;
      }
      if (sent < total) setTimeout(tick, 1);
      else done();
    };
    setTimeout(tick, 5);
  });
  await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 30_000))]);
  const elapsed = (performance.now() - start) / 1000;
  await pool.destroy();
  return {
    reqPerS: latencies.length / elapsed,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    non2xx,
    errors,
  };
}

/** Time to the first body byte and to the end of `n` streamed requests, one at a time. */
async function firstBytes(
  url: string,
  path: string,
  body: string,
  key: string | undefined,
  n: number,
): Promise<{ first: number[]; total: number[] }> {
  const pool = new Pool(url, { connections: 1 });
  const first: number[] = [];
  const total: number[] = [];
  const once = async (): Promise<[number, number]> => {
    const times = await timedStream(pool, path, body, key);
    if (STREAM_GAP_MS > 0) await new Promise((r) => setTimeout(r, STREAM_GAP_MS));
    return times;
  };
  try {
    // The throughput rounds' warm-up (`--warmup` s of this path, back to back), and at least a fifth of
    // the run: with `--only streams` the processes are fresh, and a fifth of 1,000 streams (~0.2 s) left
    // the optimizing compilers of the gateway and chat-service at work on the stream path (+1.09 ms p50
    // after it, +0.89 after 1,000 streams: bench/results/data-path-issue-13.md, "First byte after a warm-up").
    const warmUntil = performance.now() + Number(opt.warmup) * 1000;
    for (let i = 0; i < Math.max(10, Math.round(n / 5)) || performance.now() < warmUntil; i++) await once();
    for (let i = 0; i < n; i++) {
      const [f, t] = await once();
      first.push(f);
      total.push(t);
    }
  } finally {
    await pool.close();
  }
  return { first, total };
}

interface AtOnce {
  before: number;
  peak: number;
  ok: number;
  maxOpen: number;
  bytes: number;
}

/**
 * `n` long streams at once (chat-slow: 100 tokens 20 ms apart) from one server: its RSS before and at
 * the peak (sampled every 50 ms), how many streams were open at once, and the bytes of one stream.
 */
async function streamsAtOnce(server: { url: string; pid: number }, n: number, key?: string): Promise<AtOnce> {
  const pool = new Pool(server.url, { connections: n, pipelining: 1 });
  const before = rssKiB(server.pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssKiB(server.pid));
  }, 50);
  let ok = 0;
  let open = 0;
  let maxOpen = 0;
  let bytes = 0;
  try {
    await Promise.all(
      Array.from({ length: n }, async () => {
        const res = await pool.request({
          path: '/v1/chat/completions',
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
          body: chatBody('chat-slow', true, 100),
        });
        open++;
        maxOpen = Math.max(maxOpen, open);
        let b = 0;
        for await (const chunk of res.body) b += (chunk as Buffer).length;
        open--;
        if (res.statusCode === 200) {
          ok++;
          bytes = b;
        }
      }),
    );
  } finally {
    clearInterval(sampler);
    await pool.close();
  }
  return { before, peak, ok, maxOpen, bytes };
}

/** `n` long streams at once through the gateway: its RSS before, at the peak and after. */
async function concurrentStreams(
  stack: Stack,
  n: number,
): Promise<AtOnce & { after: number; later: number; settled: number }> {
  const gw = stack.gatewayOn;
  const r = await streamsAtOnce(gw, n, stack.key);
  await new Promise((r) => setTimeout(r, 3_000));
  const after = rssKiB(gw.pid);
  // The idle collection (libs/runtime memory.ts) looks every 10 s and, after start-up, collects after
  // three idle looks in a row: 45 s later it has had its chance.
  await new Promise((r) => setTimeout(r, 12_000));
  const later = rssKiB(gw.pid);
  await new Promise((r) => setTimeout(r, 30_000));
  return { ...r, after, later, settled: rssKiB(gw.pid) };
}

const mib = (kib: number) => (kib / 1024).toFixed(1);

async function main(): Promise<void> {
  if (!opt['no-build']) {
    console.log('building the production output (tools/build.js) ...');
    buildProduction();
  }
  const gatewayFlags = opt['gateway-flags']?.split(' ').filter(Boolean);
  const memoryLimitMiB = resolveMemoryLimitMiB(opt['memory-limit']);
  const stack = await startStack({
    pin: opt.pin,
    ...(memoryLimitMiB > 0 ? { memoryLimitMiB } : {}),
    ...(gatewayFlags ? { gatewayFlags } : {}),
    ...(opt.gc ? { gatewayOnNodeArgs: ['--trace-gc-nvp'] } : {}),
    ...(LAG_MS > 0 ? { lagMs: LAG_MS } : {}),
  });
  if (opt.gc && stack.gatewayOn.child.stdout) followGcTrace(stack.gatewayOn.child.stdout);
  const restoreCpus = opt.isolate ? isolateTargets(stack) : () => undefined;
  try {
    const procs = processes(stack);
    const procNames = procs.map((p) => p.name);
    await new Promise((r) => setTimeout(r, 3_000));
    const idle = Object.fromEntries(
      procs.filter((p) => !p.name.endsWith('*')).map((p) => [p.name, rssKiB(p.pid)]),
    );
    console.log(
      `gateway (limits on) node flags: ${stack.gatewayOnFlags.join(' ') || '(none)'}; memory cgroup: ${memoryLimitMiB > 0 ? `${memoryLimitMiB} MiB` : 'none (the machine)'}`,
    );
    if (opt.rss) {
      // The idle collection (libs/runtime memory.ts) looks every 10 s; start-up's garbage after one idle look.
      await new Promise((r) => setTimeout(r, 12_000));
      console.log(
        `gw on idle RSS: ${mib(idle['gw on'] ?? 0)} MiB 3 s after start, ${mib(rssKiB(stack.gatewayOn.pid))} MiB 15 s after`,
      );
    }

    const targets: Target[] = [
      { name: 'raw proxy', url: stack.rawProxy.url, path: '/v1/chat/completions', body: chatBody('bench') },
      {
        name: 'gw off, upstream',
        url: stack.gatewayOff.url,
        path: '/v1/chat/completions',
        key: stack.key,
        body: chatBody('chat-up'),
      },
      {
        name: 'gw on, upstream',
        url: stack.gatewayOn.url,
        path: '/v1/chat/completions',
        key: stack.key,
        body: chatBody('chat-up'),
      },
      {
        name: 'gw on, simulator',
        url: stack.gatewayOn.url,
        path: '/v1/chat/completions',
        key: stack.key,
        body: chatBody('chat-A'),
      },
      {
        name: 'gw on, 429',
        url: stack.gatewayOn.url,
        path: '/v1/chat/completions',
        key: stack.limitedKey,
        body: chatBody('chat-A'),
      },
      // The Anthropic Messages front door on the same two paths (the chat rows above are its baseline):
      // the same prompt and output cap, translated to the chat body and the answer back.
      {
        name: 'gw on, upstream, messages',
        url: stack.gatewayOn.url,
        path: '/v1/messages',
        key: stack.key,
        body: messagesBody('chat-up'),
      },
      {
        name: 'gw on, simulator, messages',
        url: stack.gatewayOn.url,
        path: '/v1/messages',
        key: stack.key,
        body: messagesBody('chat-A'),
      },
    ];
    if (opt['side-load']) {
      targets.push({
        name: 'gw on, simulator + side load',
        url: stack.gatewayOn.url,
        path: '/v1/chat/completions',
        key: stack.key,
        body: chatBody('chat-A'),
        side: targets[0],
      });
    }
    if (BURN > 0) {
      targets.push({
        name: `gw on, simulator, burn ${BURN}`,
        url: stack.gatewayOn.url,
        path: '/v1/chat/completions',
        key: stack.key,
        body: chatBody('chat-A'),
        burn: BURN,
      });
    }
    if (LAG_MS > 0) {
      targets.push({
        name: `gw on, sim +${LAG_MS} ms`,
        url: stack.gatewayOn.url,
        path: '/v1/chat/completions',
        key: stack.key,
        body: chatBody('chat-lag'),
      });
    }
    let afterLoad = rssKiB(stack.gatewayOn.pid);
    if (part('throughput')) {
      const cpuRate = Number(opt['cpu-rate']);
      const loadgen = LOADGEN === 'wrk' && !cpuRate ? 'wrk' : 'autocannon';
      console.log(
        `warm-up (${opt.warmup} s per target), then ${ROUNDS} rounds of ${DURATION} s, ${CONNECTIONS} connections, load generator ${loadgen}`,
      );
      // `--order 0,1,3,2,4`: the same targets in another order (indices into the list above), e.g. to
      // see whether a row's cost follows its place in the round (the target measured after a gateway's idle).
      const order = opt.order
        ? opt.order.split(',').map((i) => {
            const t = targets[Number(i)];
            if (!t) throw new Error(`--order: no target ${i} (0-${targets.length - 1})`);
            return t;
          })
        : targets;
      for (const t of order) await load(stack, t, Number(opt.warmup));
      const samples: Sample[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        for (const t of order)
          samples.push(await load(stack, t, DURATION, cpuRate ? { overallRate: cpuRate } : {}));
      }
      const rows = summarize(samples, [...procNames, loadgen]);
      console.log(
        `\nThroughput (${cpuRate ? `${cpuRate} req/s` : 'closed loop'}) and CPU per request per process (median of rounds; * is shared; ${loadgen} is the load generator):`,
      );
      console.table(rows);
      console.log(
        '\nWrite system calls (socket writes) per request per process (median of rounds; * is shared):',
      );
      console.table(summarizeWrites(samples, procNames));
      console.log(
        `\nPer request: socket writes / reads / event-loop wake-ups (main thread's voluntary context switches)${opt.gc ? "; the limits-on gateway's GC (--trace-gc-nvp)" : ''}, median of rounds:`,
      );
      console.table(summarizeTurns(samples));
      if (opt.gc) {
        console.log("\nThe limits-on gateway's collections, each round (--trace-gc-nvp):");
        console.table(summarizeGc(samples));
      }
      const raw = samples.filter((s) => s.target === 'raw proxy').map((s) => s.cpu['raw proxy'] ?? 0);
      const rawUs = median(raw);
      for (const [target, proc] of [
        ['gw off, upstream', 'gw off'],
        ['gw on, upstream', 'gw on'],
        ['gw on, simulator', 'gw on'],
        ['gw on, 429', 'gw on'],
        ['gw on, upstream, messages', 'gw on'],
        ['gw on, simulator, messages', 'gw on'],
        ...(LAG_MS > 0 ? [[`gw on, sim +${LAG_MS} ms`, 'gw on'] as const] : []),
        ...(BURN > 0 ? [[`gw on, simulator, burn ${BURN}`, 'gw on'] as const] : []),
        ...(opt['side-load'] ? [['gw on, simulator + side load', 'gw on'] as const] : []),
      ] as const) {
        const rounds = samples.filter((s) => s.target === target).map((s) => s.cpu[proc] ?? 0);
        const us = median(rounds);
        console.log(
          `${target}: gateway ${us.toFixed(0)} us/req = ${(us / rawUs).toFixed(2)}x the raw proxy (${rawUs.toFixed(0)} us/req); rounds ${rounds.map((r) => r.toFixed(0)).join(', ')}, raw ${raw.map((r) => r.toFixed(0)).join(', ')}`,
        );
      }
      // The Messages front door against chat completions on the same path, same run (issue 34's goal: the
      // gateway's CPU per request within 10 %).
      for (const path of ['upstream', 'simulator']) {
        const gw = (t: string) =>
          median(samples.filter((s) => s.target === t).map((s) => s.cpu['gw on'] ?? 0));
        const chat = gw(`gw on, ${path}`);
        const messages = gw(`gw on, ${path}, messages`);
        console.log(
          `messages vs chat completions (${path}): gateway ${messages.toFixed(0)} vs ${chat.toFixed(0)} us/req = ${((messages / chat - 1) * 100).toFixed(1)} %`,
        );
      }
      const simOn = samples.filter((s) => s.target === 'gw on, simulator');
      const stackUs = median(
        simOn.map(
          (s) =>
            (s.cpu['gw on'] ?? 0) + (s.cpu['chat-svc'] ?? 0) + (s.cpu.ledger ?? 0) + (s.cpu['nats*'] ?? 0),
        ),
      );
      const redisUs = median(simOn.map((s) => s.cpu['redis*'] ?? 0));
      console.log(
        `whole stack CPU per simulator request (gateway + chat-service + ledger + nats): ${stackUs.toFixed(0)} us` +
          ` (+ redis ${redisUs.toFixed(0)} us)`,
      );

      if (opt.quick) return;
      afterLoad = rssKiB(stack.gatewayOn.pid);
    }

    if (part('fixed')) {
      // autocannon's "fixed rate" is a budget per connection per second: each connection sends its
      // share back to back (a closed loop) at the start of every second, then waits for the next one,
      // so 1,000 req/s over 64 connections is a burst of 64 in flight for ~1/4 s, then silence; and it
      // records each latency with a coordinated-omission correction of 1 ms (a 30 ms answer also adds
      // 29 synthetic samples). Kept for comparison with earlier runs; `paced` sends at even intervals.
      console.log(
        `\nFixed rate: ${RATE} req/s for ${DURATION} s, ms (autocannon: bursts each second; paced: even intervals):`,
      );
      const fixedRows: Record<string, string | number>[] = [];
      for (const t of [targets[0]!, targets[3]!]) {
        const a = await load(stack, t, DURATION, { overallRate: RATE, connections: 64 });
        fixedRows.push({
          target: t.name,
          generator: 'autocannon',
          'req/s': a.reqPerS.toFixed(0),
          'p50 ms': a.p50.toFixed(1),
          'p99 ms': a.p99.toFixed(1),
          'non-2xx': a.non2xx + a.errors,
        });
        const p = await paced(t, RATE, DURATION, 64);
        fixedRows.push({
          target: t.name,
          generator: 'paced',
          'req/s': p.reqPerS.toFixed(0),
          'p50 ms': p.p50.toFixed(2),
          'p99 ms': p.p99.toFixed(2),
          'non-2xx': p.non2xx + p.errors,
        });
      }
      console.table(fixedRows);
    }

    if (part('streams')) {
      console.log(
        `\nStreams one at a time (${STREAMS} each after ${opt.warmup} s of warm-up, ${STREAM_GAP_MS ? `${STREAM_GAP_MS} ms apart` : 'back to back'}): time to first byte / to end, ms`,
      );
      const streamRows: Record<string, string>[] = [];
      let upstreamFirst = 0;
      for (const [name, url, key, model] of [
        ['upstream direct', stack.upstream.url, undefined, 'bench'],
        ['raw proxy', stack.rawProxy.url, undefined, 'bench'],
        ['gw on, upstream', stack.gatewayOn.url, stack.key, 'chat-up'],
        ['gw off, upstream', stack.gatewayOff.url, stack.key, 'chat-up'],
      ] as const) {
        const r = await firstBytes(url, '/v1/chat/completions', chatBody(model, true, 2), key, STREAMS);
        const p50 = pct(r.first, 50);
        if (!upstreamFirst) upstreamFirst = p50;
        streamRows.push({
          path: name,
          'first byte p50': p50.toFixed(2),
          'first byte p99': pct(r.first, 99).toFixed(2),
          'added p50': (p50 - upstreamFirst).toFixed(2),
          'end p50': pct(r.total, 50).toFixed(2),
        });
      }
      console.table(streamRows);
    }

    if (part('concurrent')) {
      console.log(`\n${CONCURRENT_STREAMS} streams at once (chat-slow, 100 tokens at 20 ms) through gw on:`);
      const cs = await concurrentStreams(stack, CONCURRENT_STREAMS);
      const perStream = (r: AtOnce) => ((r.peak - r.before) / Math.max(1, r.maxOpen)).toFixed(1);
      console.log(
        `  ${cs.ok} ok, ${cs.maxOpen} open at once, ${cs.bytes} B each; RSS ${mib(cs.before)} -> peak ${mib(cs.peak)} MiB ` +
          `(${perStream(cs)} KiB per stream) -> ${mib(cs.after)} MiB 3 s later, ${mib(cs.later)} MiB 15 s later, ${mib(cs.settled)} MiB 45 s later`,
      );
      // The floor: the same streams from a bare node:http server (same node flags and memory limit).
      const fl = await streamsAtOnce(stack.sseFloor, CONCURRENT_STREAMS);
      console.log(
        `  the floor, a bare node:http server sending the same streams (bench/stack/sse-floor.mjs): ${fl.ok} ok, ` +
          `${fl.maxOpen} open at once, ${fl.bytes} B each; RSS ${mib(fl.before)} -> peak ${mib(fl.peak)} MiB (${perStream(fl)} KiB per stream)`,
      );
    }

    if (part('errors')) {
      console.log(`\n${ERROR_SECONDS} s of 503s (embeddings; no embedding-service runs) through gw on:`);
      const errBefore = rssKiB(stack.gatewayOn.pid);
      const burst = await load(
        stack,
        {
          name: '503 burst',
          url: stack.gatewayOn.url,
          path: '/v1/embeddings',
          key: stack.key,
          body: JSON.stringify({ model: 'embed-model', input: 'hello' }),
        },
        ERROR_SECONDS,
      );
      const errAfter = rssKiB(stack.gatewayOn.pid);
      await new Promise((r) => setTimeout(r, 5_000));
      const errSettled = rssKiB(stack.gatewayOn.pid);
      await new Promise((r) => setTimeout(r, 25_000));
      const errLater = rssKiB(stack.gatewayOn.pid);
      // (the idle collection looks every 10 s and collects after three idle looks in a row: 45 s later
      // it has had its chance)
      await new Promise((r) => setTimeout(r, 15_000));
      const errSettled45 = rssKiB(stack.gatewayOn.pid);
      console.log(
        `  ${burst.responses} answers (${burst.non2xx} non-2xx) at ${burst.reqPerS.toFixed(0)} req/s, gateway ${(burst.cpu['gw on'] ?? 0).toFixed(0)} us/req; ` +
          `RSS ${mib(errBefore)} -> ${mib(errAfter)} MiB, ${mib(errSettled)} MiB 5 s later, ${mib(errLater)} MiB 30 s later, ${mib(errSettled45)} MiB 45 s later`,
      );
      if (burst.gc) {
        console.log(
          `  gateway GC during the burst, per answer: ${burst.gc.promotedBytes.toFixed(0)} bytes promoted, ` +
            `${burst.gc.pauseUs.toFixed(1)} us paused; ${burst.gc.scavengesPer1k.toFixed(2)} scavenges and ` +
            `${burst.gc.fullGcsPer1k.toFixed(3)} full collections per 1,000 answers`,
        );
      }
    }

    if (SOAK > 0 && part('soak')) {
      console.log(`\nSoak: ${SOAK} s at ${RATE} req/s (gw on, simulator), gateway RSS every 10 s:`);
      const rss: number[] = [];
      const sampler = setInterval(() => rss.push(rssKiB(stack.gatewayOn.pid)), 10_000);
      const soak = await load(stack, targets[3]!, SOAK, { overallRate: RATE, connections: 64 });
      clearInterval(sampler);
      console.log(
        `  ${soak.reqPerS.toFixed(0)} req/s, p50 ${soak.p50.toFixed(1)} ms, p99 ${soak.p99.toFixed(1)} ms, non-2xx ${soak.non2xx}; ` +
          `RSS MiB: ${rss.map(mib).join(' ')}`,
      );
      if (rss.length > 2) {
        const settled = rss.slice(Math.floor(rss.length / 6));
        console.log(
          `  after the first sixth: min ${mib(Math.min(...settled))}, max ${mib(Math.max(...settled))} MiB (${(((Math.max(...settled) - Math.min(...settled)) / Math.min(...settled)) * 100).toFixed(1)} % spread)`,
        );
      }
    }

    console.log('\nRSS MiB (idle = 3 s after start, before any load):');
    console.table(
      procs
        .filter((p) => !p.name.endsWith('*'))
        .map((p) => ({ process: p.name, idle: mib(idle[p.name] ?? 0), now: mib(rssKiB(p.pid)) })),
    );
    console.log(`gw on after the throughput rounds: ${mib(afterLoad)} MiB`);
  } finally {
    restoreCpus();
    await stack.close();
  }
}

await main();
