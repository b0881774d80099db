// What OpenTelemetry tracing costs the gateway: CPU per request and latency, tracing off vs on.
//
//   node --conditions=source --import ./tools/ts-register.js bench/telemetry.ts
//   BENCH_REQUESTS=4000 BENCH_CONCURRENCY=1,16 node ... bench/telemetry.ts
//
// Starts three gateway processes on the same fresh database, Redis and NATS (limits off, so that
// tracing is what differs): tracing off (no OTEL_* variable: the SDK is not even loaded), tracing on at
// 10 % sampling (OTEL_TRACES_SAMPLER=parentbased_traceidratio, ARG 0.1) and on at 100 %, both exporting
// OTLP/HTTP to an in-process receiver in this process. The chat-service runs in this process on the
// simulator engine (a test double answering at once). For each level of BENCH_CONCURRENCY each mode
// runs the same closed loop of non-streamed chat-A requests, BENCH_ROUNDS times (default 5), the modes
// in a rotating order; the table shows per mode the median of the rounds' CPU per request. CPU is the gateway process's user+system time from /proc/<pid>/stat over the round.
// Then, in this process, what the hot-path hooks cost when tracing is off, next to what they replace.
// Numbers, not pass/fail; bounded in count and time; everything stops by itself.
import { type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { ServiceRequest } from '@infer/contracts';
import { activeTracer, rpcPublishOptions } from '@infer/service-kit';
import { startChatService } from '../apps/chat-service/src/app.js';
import { startOtlpReceiver } from '../test/support/otlp-receiver.js';
import { createBenchDatabase, pct, type Round, round, startGatewayProcess } from './support.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

/** ns per call of the off-path hooks, next to the object literal they replace. */
function offPathCost(): { literal: number; hook: number; check: number } {
  const req = { requestId: 'r', model: { id: 'm' } } as unknown as ServiceRequest<unknown>;
  const end = Promise.resolve({ usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } });
  const N = 5_000_000;
  let sink = 0;
  const time = (f: () => void) => {
    for (let i = 0; i < N / 10; i++) f();
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) f();
    return Number(process.hrtime.bigint() - t) / N;
  };
  const literal = time(() => {
    sink += { reply: 'inbox.1' }.reply.length;
  });
  const hook = time(() => {
    sink += rpcPublishOptions('s', 'inbox.1', req, end as never).reply.length;
  });
  const check = time(() => {
    sink += activeTracer ? 1 : 0;
  });
  if (sink < 0) console.log(sink);
  return { literal, hook, check };
}

async function main(): Promise<void> {
  const db = await createBenchDatabase();
  const { databaseUrl, key } = db;
  const children: ChildProcess[] = [];
  const otlp = await startOtlpReceiver();
  const subjectPrefix = `bench.${randomBytes(6).toString('hex')}.`;
  const chat = await startChatService({ env: { ...process.env, LOG_LEVEL: 'silent' }, subjectPrefix });
  try {
    const env = { DATABASE_URL: databaseUrl, MODEL_SUBJECT_PREFIX: subjectPrefix, LIMITS_ENABLED: '0' };
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' };
    const off = await startGatewayProcess(env);
    children.push(off.child);
    const on10 = await startGatewayProcess({ ...env, ...otel, OTEL_TRACES_SAMPLER_ARG: '0.1' });
    children.push(on10.child);
    const on100 = await startGatewayProcess({ ...env, ...otel, OTEL_TRACES_SAMPLER_ARG: '1' });
    children.push(on100.child);
    const modes = [
      { mode: 'tracing off', ...off },
      { mode: 'tracing on, 10 %', ...on10 },
      { mode: 'tracing on, 100 %', ...on100 },
    ];
    for (const m of modes) await round(m.mode, m.url, m.child.pid!, key, Math.min(300, REQUESTS), 8);
    // ROUNDS rounds per concurrency, the modes in a rotating order; per mode the median of the
    // rounds' CPU per request (the machine is shared: single rounds are noisy).
    const rows: Array<Record<string, string | number>> = [];
    const medians = new Map<string, number>();
    for (const c of CONCURRENCY) {
      const per = new Map<string, Round[]>(modes.map((m) => [m.mode, []]));
      for (let r = 0; r < ROUNDS; r++) {
        for (let i = 0; i < modes.length; i++) {
          const m = modes[(i + r) % modes.length]!;
          per.get(m.mode)!.push(await round(m.mode, m.url, m.child.pid!, key, REQUESTS, c));
        }
      }
      for (const [mode, rs] of per) {
        const us = rs.map((r) => (r.cpuMs * 1000) / (r.ok + r.failed)).sort((x, y) => x - y);
        const lat = rs.flatMap((r) => r.latencies);
        const n = rs.reduce((t, r) => t + r.ok + r.failed, 0);
        const failed = rs.reduce((t, r) => t + r.failed, 0);
        const med = us[Math.floor(us.length / 2)]!;
        medians.set(`${c}|${mode}`, med);
        rows.push({
          mode,
          'in flight': c,
          requests: `${n}${failed ? ` (${failed} failed)` : ''}`,
          'req/s': (n / (rs.reduce((t, r) => t + r.wallMs, 0) / 1000)).toFixed(0),
          'p50 ms': pct(lat, 50).toFixed(2),
          'p99 ms': pct(lat, 99).toFixed(2),
          'CPU us/req (median)': med.toFixed(1),
          'CPU us/req (min..max)': `${us[0]!.toFixed(0)}..${us[us.length - 1]!.toFixed(0)}`,
        });
      }
    }
    console.log(
      `\ntracing overhead: ${ROUNDS} rounds of ${REQUESTS} requests per mode, chat-A non-streamed ` +
        `(simulator), limits off, ${new Date().toISOString()}\n`,
    );
    console.table(rows);
    for (const c of CONCURRENCY) {
      const off = medians.get(`${c}|tracing off`)!;
      console.log(
        `${c} in flight: gateway CPU per request (medians), tracing on at 10 % minus off: ` +
          `${(medians.get(`${c}|tracing on, 10 %`)! - off).toFixed(1)} us; at 100 %: ` +
          `${(medians.get(`${c}|tracing on, 100 %`)! - off).toFixed(1)} us (budget at 10 %: 20 us)`,
      );
    }
    console.log(
      `spans received by the OTLP receiver: ${otlp.spans.length} (rejected exports: ${otlp.rejected})`,
    );
    const c = offPathCost();
    console.log(
      `\ntracing off, in-process: the publish-options hook ${c.hook.toFixed(1)} ns per call vs the ` +
        `object literal it replaces ${c.literal.toFixed(1)} ns; the tracer check ${c.check.toFixed(1)} ns`,
    );
  } finally {
    for (const ch of children) ch.kill('SIGTERM');
    await Promise.all(
      children.map((ch) => new Promise((r) => (ch.exitCode !== null ? r(null) : ch.once('exit', r)))),
    );
    await chat.stop();
    await otlp.close();
    await db.drop();
  }
}

await main();
