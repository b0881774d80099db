/**
 * Embeddings throughput and latency, with and without dynamic batching (numbers, not pass/fail).
 *
 *   node --conditions=source --import ./tools/ts-register.js bench/embeddings.ts [--requests N] [--concurrency 1,8,32]
 *
 * Runs the embedding-service in-process (on a private subject prefix, against the machine's NATS) and
 * drives it over NATS with the gateway's own RpcClient, so the numbers are service + NATS + batching,
 * without the gateway's auth and limits in front. Each request embeds one short text (the common RAG
 * case where batching matters most); `concurrency` requests are in flight at all times (closed loop).
 *
 * Engines:
 *   lexical-hash   the embedded default (4096 dimensions, CPU in-process)
 *   upstream-tei   the `tei` engine against the FAKE UPSTREAM server (a test double, not a model) that
 *                  models a GPU server: every call costs 8 ms plus 0.1 ms per text, the per-call
 *                  overhead that batching amortises
 *   llama-cpp      the embedded llama.cpp engine on a tiny random-weight GGUF (1 thread)
 * Batching off = `batch.enabled: false` (every request is its own engine call); on = the engine's
 * defaults (lexical-hash: wait 1 ms, up to 256 texts; tei: wait 5 ms, up to 32 texts, 4 calls at once;
 * llama-cpp: wait 5 ms, up to 32 texts, 1 call at once).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type CatalogEntry, CatalogEntrySchema, type ServiceRequest } from '@infer/contracts';
import {
  builtinEmbeddingFactories,
  type EmbeddingEngine,
  EngineRegistry,
  startEmbeddingService,
  startFakeUpstream,
  tinyLlamaEmbeddingGguf,
  writeModel,
} from '@infer/embedding-service/public';
import { connectNats, RpcClient } from '@infer/rpc';
import { createLogger } from '@infer/telemetry';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '' },
    concurrency: { type: 'string', default: '1,8,32' },
  },
});
const concurrencies = values.concurrency.split(',').map(Number);
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** Counts engine calls and texts per model id (the batch sizes the batcher produced). */
const calls = new Map<string, { calls: number; texts: number }>();
const log = createLogger('bench', 'silent');
const embedders = new EngineRegistry<EmbeddingEngine>(
  'embeddings',
  log,
  builtinEmbeddingFactories.map((f) => ({
    type: f.type,
    create(settings, ctx) {
      const engine = f.create(settings, ctx);
      const embed = engine.embed.bind(engine);
      engine.embed = (texts, signal) => {
        const c = calls.get(ctx.model.id) ?? { calls: 0, texts: 0 };
        c.calls++;
        c.texts += texts.length;
        calls.set(ctx.model.id, c);
        return embed(texts, signal);
      };
      return engine;
    },
  })),
);

const dir = mkdtempSync(join(tmpdir(), 'bench-embeddings-'));
const gguf = writeModel(join(dir, 'embed.gguf'), tinyLlamaEmbeddingGguf());
const upstream = await startFakeUpstream({ dimensions: 1024, maxBatch: 32, latency: (n) => 8 + 0.1 * n });
const svc = await startEmbeddingService({
  env: { NATS_URL, LOG_LEVEL: 'silent' },
  subjectPrefix: `bench.${randomUUID()}.`,
  embedders,
});
const nc = await connectNats(NATS_URL, 'bench-embeddings');
const rpc = new RpcClient(nc);

const engines: Array<{
  name: string;
  dimensions: number;
  engine: Record<string, unknown>;
  requests: number;
}> = [
  { name: 'lexical-hash', dimensions: 4096, engine: { type: 'lexical-hash' }, requests: 2000 },
  { name: 'upstream-tei', dimensions: 1024, engine: { type: 'tei', base_url: upstream.url }, requests: 1500 },
  {
    name: 'llama-cpp',
    dimensions: 64,
    engine: { type: 'llama-cpp-embedding', gguf, threads: 1 },
    requests: 600,
  },
];

const TEXTS = [
  'How do I reset my password?',
  'Shipping to Canada takes five to seven business days.',
  'The warranty covers manufacturing defects for two years.',
  'Our support team answers within one business day.',
];

function model(id: string, dimensions: number, engine: Record<string, unknown>): CatalogEntry {
  return CatalogEntrySchema.parse({
    id,
    kind: 'embedding',
    rank: 1,
    tiers: ['community'],
    dimensions,
    engine,
  });
}

async function run(m: CatalogEntry, concurrency: number, total: number) {
  const latencies: number[] = [];
  let next = 0;
  const one = async () => {
    while (next < total) {
      const i = next++;
      const env: ServiceRequest = {
        requestId: randomUUID(),
        memberId: 'bench',
        keyId: 'bench',
        model: m,
        body: { model: m.id, input: `${TEXTS[i % TEXTS.length]} #${i}`, encoding_format: 'base64' },
        deadline: Date.now() + 60_000,
        stream: false,
      };
      const t0 = performance.now();
      await rpc.call(svc.subjects.embeddings, env, { idleTimeoutMs: 60_000 });
      latencies.push(performance.now() - t0);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, one));
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] as number;
  return { rps: total / seconds, p50: q(0.5), p99: q(0.99) };
}

const rows: string[][] = [];
try {
  for (const e of engines) {
    const total = values.requests ? Number(values.requests) : e.requests;
    for (const concurrency of concurrencies) {
      for (const batching of [false, true]) {
        const id = `${e.name}-${batching ? 'on' : 'off'}-${concurrency}`;
        const engine = batching ? e.engine : { ...e.engine, batch: { enabled: false } };
        const m = model(id, e.dimensions, engine);
        await run(m, concurrency, Math.min(50, total)); // warm-up: load, JIT, connections
        calls.delete(id);
        const r = await run(m, concurrency, total);
        const c = calls.get(id) ?? { calls: 1, texts: 0 };
        rows.push([
          e.name,
          batching ? 'on' : 'off',
          String(concurrency),
          r.rps.toFixed(0),
          r.p50.toFixed(2),
          r.p99.toFixed(2),
          (c.texts / c.calls).toFixed(1),
        ]);
        console.error(`done: ${rows.at(-1)?.join(' ')}`);
      }
    }
  }
} finally {
  await nc.close();
  await svc.stop();
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
}

const head = ['engine', 'batching', 'concurrency', 'req/s', 'p50 ms', 'p99 ms', 'texts/call'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(widths[i] as number)).join(' | ')} |`;
console.log(line(head));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const r of rows) console.log(line(r));
