// What OpenTelemetry tracing costs the gateway: CPU per request, tracing off vs on at 0, 10 and 100 %.
//
//   node --conditions=source --import ./tools/ts-register.js bench/telemetry.ts
//   BENCH_REQUESTS=1000 BENCH_ROUNDS=12 BENCH_CONCURRENCY=1,16 BENCH_SCHEDULE=parallel node ... bench/telemetry.ts
//   BENCH_HOOKS_ONLY=1 node ... bench/telemetry.ts      (only the in-process part, a few seconds)
//   BENCH_BEFORE=<tree of another commit> node ... bench/telemetry.ts   (its gateways in the same rounds)
//
// Starts four gateway processes on the same fresh database, Redis and NATS (limits off, so that tracing
// is what differs): tracing off (no OTEL_* variable: the SDK is not even loaded) and tracing on with
// OTEL_TRACES_SAMPLER=parentbased_traceidratio at ARG 0, 0.1 and 1, exporting OTLP/HTTP to an
// in-process receiver. The chat-service runs in this process on the simulator engine (a test double
// answering at once). Built for a busy shared machine:
// - rounds: for each level of BENCH_CONCURRENCY, BENCH_ROUNDS rounds; in each round every mode runs the
//   same closed loop of BENCH_REQUESTS non-streamed chat-A requests, all modes AT ONCE (default,
//   BENCH_SCHEDULE=parallel: whatever else loads the machine loads every mode alike) or one after
//   the other in an order that rotates and reverses from round to round (BENCH_SCHEDULE=sequential);
// - CPU per request is the gateway process's own process.cpuUsage() (every thread, microseconds; asked
//   over an IPC channel, bench/cpu-probe.ts) over its part of the round, not wall time;
// - per mode: the median of the rounds and their spread (min..max); per tracing mode, the difference
//   to "off" is taken within each round (paired: same load) and reported as the median of those
//   differences with its interquartile range; a second tracing-off gateway ("off, control",
//   BENCH_CONTROL=0 leaves it out) shows by its own difference how much of that is noise.
// Then, in this process, a second, low-noise view: the tracing work of one request through the
// gateway's hooks (HTTP span, context, NATS publish options) in CPU time, per mode, and apart from it
// the CPU this process spends exporting those spans (OTLP/HTTP JSON to a sink in another process).
// Numbers, not pass/fail; bounded in count and time; everything stops by itself.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChatService } from '@infer/chat-service/public';
import type { EndFrame, ServiceRequest } from '@infer/contracts';
import { TRACE_ID_HEADER, tracedRequest, traceHttpServer } from '@infer/gateway/public';
import { rpcPublishOptions, startTelemetry } from '@infer/telemetry';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { startOtlpReceiver } from '../test/support/otlp-receiver.js';
import { createBenchDatabase, freePort, pct, type Round, round, startGatewayProcess } from './support.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1000);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const HOOK_ITERATIONS = Number(process.env.BENCH_HOOK_ITERATIONS ?? 100_000);
const CONTROL = process.env.BENCH_CONTROL !== '0';
/** The in-process view's cold-cache requests: how many, and the MiB walked before each. */
const COLD_SAMPLES = Number(process.env.BENCH_COLD_SAMPLES ?? 400);
const COLD_MIB = Number(process.env.BENCH_COLD_MIB ?? 48);
/**
 * Requests each gateway serves before the rounds (JIT, pools, caches). At a 10 % ratio only a tenth
 * of them run the sampled path (SDK spans, the export): with the 500 this was, the 10 % gateway's
 * sampled code was still being compiled during the rounds and its figure came out near the 100 % one
 * (+40 to +56 us; +18 to +25 us after 5,000, in the same runs). A gateway serves for hours: 5,000.
 */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5000);
/**
 * BENCH_BEFORE=<dir>: a tree of another commit (apps/, libs/, tools/, bench/cpu-probe.ts and a
 * node_modules/ whose @infer/* links point into it; see bench/README.md): its gateways run beside
 * this tree's, in the same rounds, at the ratios of BENCH_BEFORE_RATIOS (default 0.1): before/after
 * side by side, paired round by round.
 */
const BEFORE = process.env.BENCH_BEFORE;
const BEFORE_RATIOS = (process.env.BENCH_BEFORE_RATIOS ?? '0.1').split(',').filter(Boolean);
/**
 * BENCH_VARIANTS: more gateways of this tree in the same rounds, each `label|ratio|ENV=VALUE ...`,
 * separated by `;` (ratio `off`: no OTEL_* variable). For elimination runs: a gateway whose extra
 * variables (or a scratch tree's experiment switches) leave one piece out, beside the full one.
 */
const VARIANTS = (process.env.BENCH_VARIANTS ?? '')
  .split(';')
  .map((v) => v.trim())
  .filter(Boolean)
  .map((v) => {
    const [label = '', ratio = 'off', vars = ''] = v.split('|').map((x) => x.trim());
    const env: Record<string, string> = {};
    for (const kv of vars.split(' ').filter(Boolean)) {
      const eq = kv.indexOf('=');
      if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
    return { label, ratio, env };
  });
/** BENCH_RATIOS: the sampler ratios of this tree's tracing gateways (default 0,0.1,1). */
const RATIOS = (process.env.BENCH_RATIOS ?? '0,0.1,1').split(',').filter(Boolean);
const pctOf = (ratio: string) => `${Number(ratio) * 100} %`;
/**
 * BENCH_GC (default 1): each gateway makes a full collection right before each of its rounds, outside
 * the CPU it is measured for. Without it a 1,000-request round either does or does not contain one of
 * the gateway's old-generation collections (~50 ms of CPU each, every ~4,000 requests here, at times
 * that depend on each process's heap heuristics), which moved a mode's round by up to ~50 us per
 * request and its median by 15 to 25 us between gateways of the same code. With it a round measures
 * the requests and their young-generation collections; what tracing adds to the old generation (its
 * share of promoted objects) is left out. BENCH_GC=0: as before.
 */
const GC_ROUNDS = process.env.BENCH_GC !== '0';
/** BENCH_GATEWAY_FLAGS: more node flags for the gateways (stdout then to $TMPDIR/bench-gateway-<mode>.log). */
const GATEWAY_FLAGS = (process.env.BENCH_GATEWAY_FLAGS ?? '').split(' ').filter(Boolean);
/** BENCH_PROFILE=1: the gateways run under --cpu-prof; their profiles say how much CPU tracing code took. */
const PROFILE_DIR =
  process.env.BENCH_PROFILE === '1'
    ? (process.env.BENCH_PROFILE_DIR ?? mkdtempSync(join(tmpdir(), 'infer-bench-prof-')))
    : null;
/** How many of the tracing functions with the most CPU to list per profile. */
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 8);
const slug = (mode: string) => mode.replace(/[^a-z0-9]+/gi, '-').replace(/-+$/, '');

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

/**
 * The share of a CPU profile's busy samples spent in tracing code: the OpenTelemetry packages and our
 * telemetry modules, plus Node's own frames (AsyncLocalStorage, natives) called from them. Samples
 * are weighed by their time; idle time is left out. A ratio within one process, so the machine's load
 * hardly moves it.
 */
function tracingShare(file: string): {
  share: number;
  gc: number;
  busyMs: number;
  tracingMs: number;
  top: string[];
} {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const isTracing = (url: string) =>
    url.includes('@opentelemetry/') ||
    url.includes('/src/telemetry/') ||
    url.includes('/telemetry/engine-spans');
  const isNodeOwn = (url: string) => url === '' || url.startsWith('node:');
  const memo = new Map<number, boolean>();
  const attributed = (id: number): boolean => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const n = byId.get(id);
    let r = false;
    if (n) {
      if (isTracing(n.callFrame.url)) r = true;
      else if (isNodeOwn(n.callFrame.url)) {
        const p = parent.get(id);
        r = p !== undefined && attributed(p);
      }
    }
    memo.set(id, r);
    return r;
  };
  let busy = 0;
  let tracing = 0;
  let gc = 0;
  const byFn = new Map<string, number>();
  prof.samples.forEach((id, i) => {
    const dt = prof.timeDeltas[i] ?? 0;
    const fn = byId.get(id)?.callFrame.functionName;
    if (fn === '(idle)') return;
    busy += dt;
    if (fn === '(garbage collector)') gc += dt;
    else if (attributed(id)) {
      tracing += dt;
      // Charged to the nearest tracing frame (Node internals called from it go to it).
      let at = id;
      while (!isTracing(byId.get(at)?.callFrame.url ?? 'x') && parent.has(at)) at = parent.get(at) as number;
      const f = byId.get(at)?.callFrame;
      const key = `${f?.functionName || '(anonymous)'} ${(f?.url ?? '').split('/').slice(-2).join('/')}`;
      byFn.set(key, (byFn.get(key) ?? 0) + dt);
    }
  });
  const top = [...byFn.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([k, v]) => `${((v / busy) * 100).toFixed(2)} % ${k}`);
  return {
    share: busy ? tracing / busy : 0,
    gc: busy ? gc / busy : 0,
    busyMs: busy / 1000,
    tracingMs: tracing / 1000,
    top,
  };
}
/** `parallel`: a round runs every mode at once (same load on each); `sequential`: one after another. */
const SCHEDULE = process.env.BENCH_SCHEDULE === 'sequential' ? 'sequential' : 'parallel';

interface Gateway {
  mode: string;
  url: string;
  child: ChildProcess;
  /** CPU time the process has used, microseconds (user + system); `gc`: after a full collection. */
  cpuUs(gc?: boolean): Promise<number>;
}

/** The gateway from its main.ts with the CPU probe preloaded, on a free port, once /readyz answers. */
async function startGateway(mode: string, env: Record<string, string>, cwd?: string): Promise<Gateway> {
  const { child, url } = await startGatewayProcess(env, {
    cwd,
    nodeFlags: [
      '--import',
      './bench/cpu-probe.ts',
      ...(GC_ROUNDS ? ['--expose-gc'] : []),
      ...GATEWAY_FLAGS,
      ...(PROFILE_DIR
        ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${slug(mode)}.cpuprofile`]
        : []),
    ],
    // With extra node flags (e.g. --trace-deopt), the gateway's stdout goes to a file per mode, from the
    // start (a pipe read only once it is ready would fill up and stall it).
    stdout: GATEWAY_FLAGS.length
      ? openSync(join(tmpdir(), `bench-gateway-${slug(mode)}.log`), 'w')
      : 'ignore',
    ipc: true,
    name: `gateway (${mode})`,
  });
  /** CPU used so far; after a full collection first when `gc` (not counted: read after it). */
  const cpuUs = (gc = false) =>
    new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`gateway (${mode}) did not report its CPU`)), 5_000);
      child.once('message', (m: { cpu: { user: number; system: number } }) => {
        clearTimeout(t);
        resolve(m.cpu.user + m.cpu.system);
      });
      child.send(gc ? 'gc' : 'cpu');
    });
  return { mode, url, child, cpuUs };
}

/** One round against one gateway: the round's numbers, CPU from the process itself. */
async function measuredRound(g: Gateway, key: string, n: number, c: number): Promise<Round & { us: number }> {
  const before = await g.cpuUs(GC_ROUNDS);
  const r = await round(g.mode, g.url, g.child.pid as number, key, n, c);
  const after = await g.cpuUs();
  return { ...r, us: (after - before) / (r.ok + r.failed) };
}

const median = (xs: number[]): number => pct(xs, 50);
/** Requests each mode's gateway served (for the profiles' per-request figures). */
const served_ = new Map<string, number>();

/** One request's tracing work, in cold caches: median wall time of each step (ns), and their sum. */
interface ColdCost {
  listener: number;
  onRequest: number;
  handler: number;
  total: number;
}

/**
 * In this process, the tracing work of one request through the gateway's hooks: the HTTP server
 * listener (span, context), the onRequest hook's part (the header), the route's handler entered in the
 * request's context (the onRoute wrapper) with the NATS publish options inside it and their headers
 * encoded as publish() does (since the fourth pass), and the response's close; ns per request, export left out (the loop never yields to the exporter's timer). "off" is the
 * same calls with no tracer: what the hooks add is the difference to it.
 * Then the same request in cold caches (what one request at a time meets, ~380 us of gateway CPU
 * apart): before each one a walk over BENCH_COLD_MIB (48) MiB evicts the caches (L2 2 MiB and L3
 * 32 MiB here); each step's wall time, median of BENCH_COLD_SAMPLES (400) requests.
 */
async function hookCost(
  otlpUrl: string,
): Promise<Array<{ mode: string; ns: number; exportNs: number; cold: ColdCost }>> {
  const req = {
    requestId: 'r',
    model: { id: 'chat-A' },
    stream: false,
  } as unknown as ServiceRequest<unknown>;
  const end = Promise.resolve({
    result: {},
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  } as EndFrame);
  const out: Array<{ mode: string; ns: number; exportNs: number; cold: ColdCost }> = [];
  const modes: Array<[string, string | null]> = [
    ['off', null],
    ['on, 0 %', '0'],
    ['on, 10 %', '0.1'],
    ['on, 100 %', '1'],
  ];
  const evict = new Float64Array((COLD_MIB * 1024 * 1024) / 8);
  for (const [mode, ratio] of modes) {
    const h = startTelemetry(
      'bench',
      ratio === null
        ? {}
        : {
            OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl,
            OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
            OTEL_TRACES_SAMPLER_ARG: ratio,
          },
    );
    const server = new EventEmitter();
    let sink = 0;
    server.on('request', () => {
      sink++;
    });
    type Hook = (r: unknown, reply: unknown, done: () => void) => void;
    type Handler = (r: unknown, reply: unknown) => unknown;
    const hooks: Record<string, Hook | ((route: { handler: Handler }) => void)> = {};
    const f = {
      addHook: (name: string, fn: Hook) => {
        hooks[name] = fn;
      },
    };
    traceHttpServer(server as unknown as Server, f as unknown as FastifyInstance);
    // The tracing part of the gateway's own onRequest hook (app.ts: the x-trace-id header), or the
    // tracing hook of a version that had one.
    const onRequest =
      (hooks.onRequest as Hook | undefined) ??
      ((r, p, done) => {
        const id = tracedRequest(r as FastifyRequest);
        if (id !== undefined) (p as { header(k: string, v: string): unknown }).header(TRACE_ID_HEADER, id);
        done();
      });
    // A preHandler hook, if a version of the hooks has one (how the context was entered before).
    const preHandler = (hooks.preHandler as Hook | undefined) ?? ((_r, _p, done) => done());
    // The chat route, registered after the hooks (as Nest's are): through onRoute, as Fastify does.
    const route: { handler: Handler } = {
      handler: () => {
        const o = rpcPublishOptions('infer.chat.completions', 'inbox.1', req, end);
        // The header block as publish() encodes it (MsgHdrs and ours both have encode(); not typed).
        const h = o.headers as { encode?: () => Uint8Array } | undefined;
        sink += o.reply.length + (h?.encode?.().length ?? 0);
      },
    };
    (hooks.onRoute as ((r: { handler: Handler }) => void) | undefined)?.call(f, route);
    const stamps = [0n, 0n, 0n, 0n];
    const one = (timed = false) => {
      const raw = { method: 'POST', url: '/v1/chat/completions', headers: { host: 'h' } };
      let close: (() => void) | undefined;
      const res = {
        req: raw,
        statusCode: 200,
        writableFinished: true,
        setHeader() {},
        once(_e: string, fn: () => void) {
          close = fn;
        },
      };
      const reply = { header: (_k: string, _v: string) => reply };
      const freq = {
        raw,
        id: 'req_1',
        method: 'POST',
        routeOptions: { url: '/v1/chat/completions' },
        auth: { memberId: 'm', keyId: 'k', tier: 'inference' },
      };
      if (timed) stamps[0] = process.hrtime.bigint();
      server.emit('request', raw, res);
      if (timed) stamps[1] = process.hrtime.bigint();
      onRequest(freq, reply, () => undefined);
      if (timed) stamps[2] = process.hrtime.bigint();
      preHandler(freq, reply, () => route.handler(freq, reply));
      close?.call(res);
      if (timed) stamps[3] = process.hrtime.bigint();
    };
    for (let i = 0; i < HOOK_ITERATIONS / 10; i++) one();
    await new Promise((r) => setImmediate(r));
    await h.flush();
    let ns = 0;
    let exportNs = 0;
    // Batches small enough that the span processor's queue (2,048) keeps every span of a batch.
    const batch = 500;
    for (let done = 0; done < HOOK_ITERATIONS; done += batch) {
      // CPU time, not wall time: on a busy machine the loop is preempted.
      const t = process.cpuUsage();
      for (let i = 0; i < batch; i++) one();
      const u = process.cpuUsage(t);
      ns += (u.user + u.system) * 1000;
      // Settle the span-ending callbacks of the batch, then export its spans (OTLP/HTTP JSON to a
      // sink in another process), timed apart: what the export costs this process per request.
      await new Promise((r) => setImmediate(r));
      const e = process.cpuUsage();
      await h.flush();
      const v = process.cpuUsage(e);
      exportNs += (v.user + v.system) * 1000;
    }
    const steps: number[][] = [[], [], [], []];
    for (let i = 0; i < COLD_SAMPLES; i++) {
      for (let j = 0; j < evict.length; j += 8) evict[j] = (evict[j] as number) + 1;
      one(true);
      const [a, b, c, d] = stamps as [bigint, bigint, bigint, bigint];
      steps[0]?.push(Number(b - a));
      steps[1]?.push(Number(c - b));
      steps[2]?.push(Number(d - c));
      steps[3]?.push(Number(d - a));
      if (i % 50 === 49) await new Promise((r) => setImmediate(r));
    }
    const [listener, onReq, handler, total] = steps.map(median) as [number, number, number, number];
    out.push({
      mode,
      ns: ns / HOOK_ITERATIONS,
      exportNs: exportNs / HOOK_ITERATIONS,
      cold: { listener, onRequest: onReq, handler, total },
    });
    await h.shutdown();
    if (sink < 0) console.log(sink);
  }
  return out;
}

/** An OTLP/HTTP sink in a process of its own: answers every export 200 and counts nothing. */
async function startSink(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.end('{}')); })` +
        `.listen(${port}, '127.0.0.1', () => process.send('up'));` +
        `process.on('disconnect', () => process.exit(0));`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );
  await new Promise((r) => child.once('message', r));
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

async function printHookCost(): Promise<void> {
  const sink = await startSink();
  try {
    const hooks = await hookCost(sink.url);
    const off = hooks[0] as { ns: number; exportNs: number };
    console.log(
      `\nin this process: the gateway's tracing hooks per request (HTTP span, context, NATS publish ` +
        `options; ${HOOK_ITERATIONS} requests, CPU time), and the OTLP export of their spans to a sink ` +
        'in another process',
    );
    for (const h of hooks) {
      const total = h.ns + h.exportNs - off.ns - off.exportNs;
      console.log(
        `  ${h.mode.padEnd(10)} hooks ${(h.ns / 1000).toFixed(2)} us, export ${(h.exportNs / 1000).toFixed(2)} us` +
          (h.mode === 'off' ? '' : `: +${(total / 1000).toFixed(2)} us per request vs off`),
      );
    }
    const offCold = (hooks[0] as { cold: ColdCost }).cold;
    console.log(
      `\nthe same, one request in cold caches (${COLD_MIB} MiB walked before each; median of ${COLD_SAMPLES}, ` +
        'wall time, us): listener (span, context) / onRequest (header) / handler (context entered, NATS ' +
        'publish options) / total',
    );
    const us = (ns: number) => (ns / 1000).toFixed(2);
    for (const h of hooks) {
      const c = h.cold;
      console.log(
        `  ${h.mode.padEnd(10)} ${us(c.listener)} / ${us(c.onRequest)} / ${us(c.handler)} / ${us(c.total)}` +
          (h.mode === 'off' ? '' : `: +${us(c.total - offCold.total)} us vs off`),
      );
    }
  } finally {
    sink.stop();
  }
}

async function main(): Promise<void> {
  if (process.env.BENCH_HOOKS_ONLY === '1') {
    await printHookCost();
    return;
  }
  const db = await createBenchDatabase();
  const { databaseUrl, key } = db;
  const gateways: Gateway[] = [];
  const otlp = await startOtlpReceiver();
  const subjectPrefix = `bench.${randomBytes(6).toString('hex')}.`;
  const chat = await startChatService({ env: { ...process.env, LOG_LEVEL: 'silent' }, subjectPrefix });
  try {
    const env = { DATABASE_URL: databaseUrl, MODEL_SUBJECT_PREFIX: subjectPrefix, LIMITS_ENABLED: '0' };
    // The batch span processor's settings stay OpenTelemetry's defaults (OTEL_BSP_*: 5 s, 512 spans).
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' };
    gateways.push(await startGateway('off', env));
    // A second gateway with tracing off: its difference to "off" is what this machine's noise and the
    // luck of two processes amount to (an A/A control); a tracing mode's difference means something
    // only where it clearly exceeds the control's.
    if (CONTROL) gateways.push(await startGateway('off, control', env));
    for (const ratio of RATIOS) {
      gateways.push(
        await startGateway(`on, ${pctOf(ratio)}`, { ...env, ...otel, OTEL_TRACES_SAMPLER_ARG: ratio }),
      );
    }
    for (const v of VARIANTS) {
      const tracing = v.ratio === 'off' ? {} : { ...otel, OTEL_TRACES_SAMPLER_ARG: v.ratio };
      gateways.push(await startGateway(v.label, { ...env, ...tracing, ...v.env }));
    }
    if (BEFORE) {
      for (const ratio of BEFORE_RATIOS) {
        const mode = `before, ${pctOf(ratio)}`;
        gateways.push(await startGateway(mode, { ...env, ...otel, OTEL_TRACES_SAMPLER_ARG: ratio }, BEFORE));
      }
    }
    // Warm-up: JIT, connection pools, caches; every gateway at once, so that all of them end it
    // together and go straight into the rounds. One after the other, the first ones sat idle for
    // minutes while the others warmed up, and the gateway's idle heap trim (a "last resort" full GC
    // once idle, libs/runtime/src/memory.ts) ran in them: they came out up to ~170 us per
    // request dearer than the last one started, whatever their tracing mode (bench/README.md).
    await Promise.all(gateways.map((g) => measuredRound(g, key, WARMUP, 8)));
    const rows: Array<Record<string, string | number>> = [];
    served_.clear();
    const diffs: string[] = [];
    for (const c of CONCURRENCY) {
      const per = new Map<string, Array<Round & { us: number }>>(gateways.map((g) => [g.mode, []]));
      for (let r = 0; r < ROUNDS; r++) {
        // Rotate the order and reverse it every other round: no mode always follows the same one.
        const order = gateways.map((_, i) => gateways[(i + r) % gateways.length] as Gateway);
        if (r % 2) order.reverse();
        if (SCHEDULE === 'parallel') {
          const results = await Promise.all(order.map((g) => measuredRound(g, key, REQUESTS, c)));
          for (const x of results) per.get(x.mode)?.push(x);
        } else {
          for (const g of order) per.get(g.mode)?.push(await measuredRound(g, key, REQUESTS, c));
        }
      }
      const off = per.get('off') as Array<Round & { us: number }>;
      for (const [mode, rs] of per) {
        const us = rs.map((x) => x.us);
        const lat = rs.flatMap((x) => x.latencies);
        const n = rs.reduce((t, x) => t + x.ok + x.failed, 0);
        const failed = rs.reduce((t, x) => t + x.failed, 0);
        const d = rs.map((x, i) => x.us - (off[i] as { us: number }).us);
        served_.set(mode, (served_.get(mode) ?? WARMUP) + n);
        rows.push({
          mode,
          'in flight': c,
          requests: `${n}${failed ? ` (${failed} failed)` : ''}`,
          'req/s': (n / (rs.reduce((t, x) => t + x.wallMs, 0) / 1000)).toFixed(0),
          'p50 ms': pct(lat, 50).toFixed(2),
          'p99 ms': pct(lat, 99).toFixed(2),
          'CPU us/req median': median(us).toFixed(1),
          'min..max': `${Math.min(...us).toFixed(0)}..${Math.max(...us).toFixed(0)}`,
          'vs off, paired median':
            mode === 'off' ? '' : `${median(d) >= 0 ? '+' : ''}${median(d).toFixed(1)}`,
          'vs off, p25..p75': mode === 'off' ? '' : `${pct(d, 25).toFixed(1)}..${pct(d, 75).toFixed(1)}`,
        });
        if (mode !== 'off') {
          diffs.push(
            `${c} in flight, ${mode}: ${median(d) >= 0 ? '+' : ''}${median(d).toFixed(1)} us/req vs off ` +
              `(paired over ${rs.length} rounds; p25..p75 ${pct(d, 25).toFixed(1)}..${pct(d, 75).toFixed(1)})`,
          );
        }
      }
      // This tree against the other commit's at the same ratio, paired round by round.
      for (const ratio of BEFORE ? BEFORE_RATIOS : []) {
        const a = per.get(`on, ${pctOf(ratio)}`);
        const b = per.get(`before, ${pctOf(ratio)}`);
        if (!a || !b) continue;
        const d = a.map((x, i) => x.us - (b[i] as { us: number }).us);
        diffs.push(
          `${c} in flight, on vs before at ${pctOf(ratio)}: ${median(d) >= 0 ? '+' : ''}${median(d).toFixed(1)} ` +
            `us/req (paired over ${d.length} rounds; p25..p75 ${pct(d, 25).toFixed(1)}..${pct(d, 75).toFixed(1)})`,
        );
      }
    }
    console.log(
      `\ntracing overhead: ${ROUNDS} rounds (${SCHEDULE}) of ${REQUESTS} requests per mode and concurrency, chat-A ` +
        `non-streamed (simulator), limits off, ${new Date().toISOString()}\n`,
    );
    console.table(rows);
    for (const d of diffs) console.log(d);
    console.log('budget: on at 10 % <= +20 us/req; off: no OTEL_* variable, nothing installed');
    console.log(
      `spans received by the OTLP receiver: ${otlp.spans.length} (rejected exports: ${otlp.rejected})`,
    );
  } finally {
    for (const g of gateways) g.child.kill('SIGTERM');
    await Promise.all(
      gateways.map(
        (g) => new Promise((r) => (g.child.exitCode !== null ? r(null) : g.child.once('exit', r))),
      ),
    );
    await chat.stop();
  }
  if (PROFILE_DIR) {
    console.log(
      '\nCPU profiles of the gateways (--cpu-prof, whole run): self time in tracing code ' +
        '(@opentelemetry/*, our telemetry modules, and the Node internals they call). Rough: V8 ' +
        'charges a function inlined into another to its caller, both ways',
    );
    for (const g of gateways) {
      try {
        const { share, gc, busyMs, tracingMs, top } = tracingShare(
          join(PROFILE_DIR, `${slug(g.mode)}.cpuprofile`),
        );
        const served = served_.get(g.mode) ?? 1;
        console.log(
          `  ${g.mode.padEnd(14)} tracing ${(share * 100).toFixed(2)} % of ${busyMs.toFixed(0)} ms busy ` +
            `(start-up included) = ${((tracingMs * 1000) / served).toFixed(1)} us per request served ` +
            `(${served}); garbage collector ${(gc * 100).toFixed(1)} %`,
        );
        for (const t of top) console.log(`      ${t}`);
      } catch (e) {
        console.log(`  ${g.mode}: no profile (${(e as Error).message})`);
      }
    }
    // BENCH_PROFILE_DIR=<dir>: the profiles stay there (e.g. to compare two modes function by function).
    if (!process.env.BENCH_PROFILE_DIR) rmSync(PROFILE_DIR, { recursive: true, force: true });
  }
  try {
    await printHookCost();
  } finally {
    await otlp.close();
    await db.drop();
  }
}

await main();
