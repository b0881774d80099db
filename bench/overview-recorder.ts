/**
 * What the console overview's traffic recorder costs on the request path: TrafficRecorder.record()
 * (one call per finished model request, apps/gateway/src/overview/traffic.ts) against, in the same
 * run, the prom-client work settle() already did per request before it (MetricsService.modelDone:
 * a counter, two token counters, a histogram). Then the once-a-second flush: one Redis pipeline for
 * all the requests of that second, timed against the machine's Redis.
 *
 *   node --conditions=source --import ./tools/ts-register.js bench/overview-recorder.ts
 */
import { performance } from 'node:perf_hooks';
import { MetricsService, TrafficRecorder } from '@infer/gateway/public';
import { Redis } from 'ioredis';

const N = Number(process.env.BENCH_CALLS ?? 2_000_000);
const MODELS = ['chat-A', 'chat-B', 'chat-C', 'chat-D', 'chat-E', 'chat-F', 'chat-G', 'embed'];

function time(label: string, fn: (i: number) => void): { label: string; ns: number } {
  for (let i = 0; i < 100_000; i++) fn(i); // warm-up
  const t = performance.now();
  for (let i = 0; i < N; i++) fn(i);
  return { label, ns: ((performance.now() - t) * 1e6) / N };
}

async function main() {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = `bench:ovrec:${process.pid}:`;
  try {
    const metrics = new MetricsService();
    // Flushes by hand below, never by its timer.
    const rec = new TrafficRecorder(redis, prefix, 3_600_000);
    const now = Date.now();
    const rows = [
      time('metrics.modelDone (prom-client, already on the path)', (i) =>
        metrics.modelDone(
          MODELS[i & 7] as string,
          'inference',
          '/v1/chat/completions',
          200,
          100,
          20,
          0.05 + (i % 50) / 1000,
        ),
      ),
      time('traffic.record (new)', (i) =>
        rec.record(MODELS[i & 7] as string, i % 50 ? 200 : 500, 20 + (i % 400), 120, now),
      ),
    ];
    console.log(`\nper-request cost, ${N} calls each (Node ${process.version})\n`);
    console.log('| call | ns per request |');
    console.log('| --- | --- |');
    for (const r of rows) console.log(`| ${r.label} | ${r.ns.toFixed(0)} |`);

    // One second of traffic at 5,000 requests/s over 8 models, flushed as one pipeline.
    const flushes: number[] = [];
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 5000; i++) rec.record(MODELS[i & 7] as string, 200, 20 + (i % 900), 120);
      const t = performance.now();
      await rec.flush();
      flushes.push(performance.now() - t);
    }
    flushes.sort((a, b) => a - b);
    console.log(
      `\nflush of one second at 5,000 req/s (8 models): p50 ${flushes[10]?.toFixed(2)} ms, max ${flushes.at(-1)?.toFixed(2)} ms (one pipeline, off the request path)`,
    );
  } finally {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
