import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  ApiError,
  type CatalogEntry,
  RERANK_MAX_DOCUMENTS,
  type RerankResponse,
  RerankResponseSchema,
  type ServiceRequest,
} from '@infer/contracts';
import { connectNats, type NatsConnection, RpcClient } from '@infer/rpc';
import { type EmbeddingService, startEmbeddingService } from '../app.js';
import type { RerankEngine } from '../engines/engine.js';
import { EngineRegistry } from '../engines/registry.js';
import { catalogEntry, silentLog } from '../testing/catalog.js';
import { countTokens } from '../tokens.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const dec = new TextDecoder();
const bm25 = (over: Record<string, unknown> = {}) =>
  catalogEntry({ id: 'rerank-test', kind: 'rerank', engine: { type: 'bm25' }, ...over });

/** A rerank engine for this spec that returns fixed scores (to test sorting, ties and clamping). */
const fixedScores = (scores: number[], calls: { running: number; most: number }): RerankEngine => ({
  type: 'fixed-scores',
  ready: async () => ({ maxQueryTokens: 100, maxConcurrent: 1 }),
  countQueryTokens: (q) => countTokens(q),
  rank: async (_q, docs) => {
    calls.running++;
    calls.most = Math.max(calls.most, calls.running);
    await new Promise((r) => setTimeout(r, 10));
    calls.running--;
    return { scores: docs.map((_, i) => scores[i % scores.length] as number), tokens: 7 };
  },
});

const envelope = (model: CatalogEntry, body: unknown, stream = false) =>
  ({
    requestId: randomUUID(),
    memberId: 'm',
    keyId: 'k',
    model,
    body,
    deadline: Date.now() + 10_000,
    stream,
  }) satisfies ServiceRequest;

describe('rerank handler over NATS', () => {
  let svc: EmbeddingService;
  let nc: NatsConnection;
  let client: RpcClient;
  const load = { running: 0, most: 0 };

  before(async () => {
    const rankers = new EngineRegistry<RerankEngine>('rerank', silentLog);
    const { bm25Factory } = await import('../engines/bm25.js');
    rankers.register(bm25Factory);
    rankers.register({ type: 'fixed-scores', create: (s) => fixedScores(s.scores as number[], load) });
    svc = await startEmbeddingService({
      env: { NATS_URL, LOG_LEVEL: 'silent' },
      subjectPrefix: `test.${randomUUID()}.`,
      rankers,
    });
    nc = await connectNats(NATS_URL, 'rerank-handler-spec');
    client = new RpcClient(nc);
  });
  after(async () => {
    await nc?.close();
    await svc?.stop();
  });

  const call = async (model: CatalogEntry, body: unknown) => {
    const end = await client.call(svc.subjects.rerank, envelope(model, body), { idleTimeoutMs: 10_000 });
    return { end, res: RerankResponseSchema.parse(end.data) as RerankResponse };
  };
  const failure = async (model: CatalogEntry, body: unknown) => {
    try {
      await call(model, body);
    } catch (e) {
      if (e instanceof ApiError) return e;
      throw e;
    }
    throw new Error('expected a failure');
  };
  const DOCS = ['Bananas are yellow', 'Paris is the capital of France', 'Berlin is the capital of Germany'];

  it('sorts by relevance, keeps original indexes, echoes documents, counts tokens in meta and usage', async () => {
    const { res, end } = await call(bm25(), {
      model: 'rerank-test',
      query: 'capital of France',
      documents: DOCS,
    });
    assert.match(res.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      res.results.map((r) => r.index),
      [1, 2, 0],
    );
    assert.deepEqual(res.results[0]?.document, { text: DOCS[1] });
    const scores = res.results.map((r) => r.relevance_score);
    assert.deepEqual(
      [...scores].sort((a, b) => b - a),
      scores,
    );
    const tokens = countTokens('capital of France') + DOCS.reduce((s, d) => s + countTokens(d), 0);
    assert.deepEqual(res.meta, { billed_units: { total_tokens: tokens }, tokens: { input_tokens: tokens } });
    assert.deepEqual(end.usage, { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens });
  });

  it('cuts to top_n (all when larger), drops documents when asked, reads {text} documents', async () => {
    const top = await call(bm25(), { model: 'rerank-test', query: 'capital', documents: DOCS, top_n: 1 });
    assert.equal(top.res.results.length, 1);
    const all = await call(bm25(), { model: 'rerank-test', query: 'capital', documents: DOCS, top_n: 10 });
    assert.equal(all.res.results.length, 3);
    const bare = await call(bm25(), {
      model: 'rerank-test',
      query: 'capital',
      documents: DOCS.map((text) => ({ text })),
      return_documents: false,
    });
    assert.ok(bare.res.results.every((r) => r.document === undefined));
    assert.deepEqual(
      bare.res.results.map((r) => r.index),
      all.res.results.map((r) => r.index),
    );
  });

  it('breaks ties by the original index and clamps scores into [0, 1]', async () => {
    const m = catalogEntry({
      id: 'fixed',
      kind: 'rerank',
      engine: { type: 'fixed-scores', scores: [0.5, 2, 0.5, -1, Number.NaN] },
    });
    const { res } = await call(m, { model: 'fixed', query: 'q', documents: ['a', 'b', 'c', 'd', 'e'] });
    assert.deepEqual(
      res.results.map((r) => [r.index, r.relevance_score]),
      [
        [1, 1],
        [0, 0.5],
        [2, 0.5],
        [3, 0],
        [4, 0],
      ],
    );
  });

  it('refuses too many documents and a query over the limit, naming the field', async () => {
    const many = await failure(bm25(), {
      model: 'rerank-test',
      query: 'q',
      documents: Array.from({ length: RERANK_MAX_DOCUMENTS + 1 }, () => 'd'),
    });
    assert.equal(many.status, 400);
    assert.equal(many.param, 'documents');
    const long = await failure(bm25({ context_window: 3 }), {
      model: 'rerank-test',
      query: 'a b c d',
      documents: ['x'],
    });
    assert.equal(long.status, 400);
    assert.equal(long.param, 'query');
    assert.equal(
      (await failure(bm25(), { model: 'rerank-test', query: 'q', documents: [] })).param,
      'documents',
    );
    assert.equal(
      (await failure(bm25(), { model: 'rerank-test', query: 'q', documents: ['a'], top_n: 0 })).param,
      'top_n',
    );
  });

  it('runs at most maxConcurrent rerank calls of one model at once', async () => {
    const m = catalogEntry({ id: 'fixed', kind: 'rerank', engine: { type: 'fixed-scores', scores: [0.1] } });
    load.most = 0;
    await Promise.all(
      Array.from({ length: 5 }, () => call(m, { model: 'fixed', query: 'q', documents: ['a'] })),
    );
    assert.equal(load.most, 1);
  });

  it('streams results in frames that join into the same response', async () => {
    const docs = Array.from(
      { length: 400 },
      (_, i) => `document ${i} ${'capital '.repeat(i % 5)} ${'x'.repeat(2000)}`,
    );
    const body = { model: 'rerank-test', query: 'capital', documents: docs };
    const st = client.stream(svc.subjects.rerank, envelope(bm25(), body, true), { idleTimeoutMs: 10_000 });
    const frames: unknown[][] = [];
    for await (const raw of st) frames.push(JSON.parse(dec.decode(raw)));
    const end = await st.end;
    assert.ok(frames.length > 1, `several frames, got ${frames.length}`);
    const results = frames.flat() as RerankResponse['results'];
    assert.equal(results.length, 400);
    assert.deepEqual((end.data as RerankResponse).results, []);
    assert.ok((results[0]?.relevance_score as number) >= (results[399]?.relevance_score as number));
    assert.equal(new Set(results.map((r) => r.index)).size, 400);
  });
});
