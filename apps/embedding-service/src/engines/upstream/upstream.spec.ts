import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { catalogEntry, cosine, engineContext, neverAborted } from '../../testing/catalog.js';
import { type FakeUpstream, startFakeUpstream } from '../../testing/fake-upstream.js';
import { countTokens } from '../../tokens.js';
import type { EmbeddingEngine, RerankEngine } from '../engine.js';
import { EngineConfigError } from '../settings.js';
import { apportion, errorMessage } from './http.js';
import { openaiEmbeddingFactory, openaiRerankFactory } from './openai.js';
import { teiEmbeddingFactory, teiRerankFactory } from './tei.js';

const embedder = (factory: typeof teiEmbeddingFactory, engine: Record<string, unknown>, over = {}) => {
  const model = catalogEntry({ id: 'embed-up', dimensions: 64, engine: engine as never, ...over });
  return factory.create(model.engine as never, engineContext(model)) as EmbeddingEngine;
};
const ranker = (factory: typeof teiRerankFactory, engine: Record<string, unknown>, over = {}) => {
  const model = catalogEntry({ id: 'rerank-up', kind: 'rerank', engine: engine as never, ...over });
  return factory.create(model.engine as never, engineContext(model)) as RerankEngine;
};

/** A port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const isStatus = (status: number, message?: RegExp) => (e: unknown) =>
  e instanceof ApiError && e.status === status && (!message || message.test(e.message));

describe('upstream engines against a fake upstream server (test double)', () => {
  let up: FakeUpstream;
  before(async () => {
    up = await startFakeUpstream({ dimensions: 64, maxBatch: 32 });
  });
  after(async () => {
    await up?.close();
  });

  it('tei: embeds through POST /embed with its normalize/truncate settings', async () => {
    const e = embedder(teiEmbeddingFactory, { type: 'tei', base_url: up.url });
    assert.deepEqual(
      { ...(await e.ready()), batch: undefined },
      { dimensions: 64, maxInputTokens: Number.MAX_SAFE_INTEGER, batch: undefined },
    );
    assert.equal((await e.ready()).batch.max_items, 32, "TEI's default client batch size");
    up.calls.length = 0;
    const { vectors, tokens } = await e.embed(
      ['the cat sat', 'the cat sat on the mat', 'stock prices'],
      neverAborted,
    );
    assert.equal(tokens, undefined, 'TEI reports no usage: the approximation is used');
    assert.deepEqual(up.calls[0]?.path, '/embed');
    assert.deepEqual(up.calls[0]?.body, {
      inputs: ['the cat sat', 'the cat sat on the mat', 'stock prices'],
      normalize: true,
      truncate: false,
    });
    assert.equal(vectors.length, 3);
    assert.ok(
      cosine(vectors[0] as Float32Array, vectors[1] as Float32Array) >
        cosine(vectors[0] as Float32Array, vectors[2] as Float32Array),
    );
  });

  it('tei: reranks through POST /rerank, in calls of max_documents_per_call, scores back in document order', async () => {
    const r = ranker(teiRerankFactory, { type: 'tei', base_url: up.url, max_documents_per_call: 2 });
    up.calls.length = 0;
    const docs = ['the cat sat', 'bananas', 'a cat sat down', 'stocks'];
    const { scores, tokens } = await r.rank('cat sat', docs, neverAborted);
    assert.equal(up.calls.length, 2);
    assert.deepEqual(
      up.calls.map((c) => c.body.texts),
      [docs.slice(0, 2), docs.slice(2)],
    );
    assert.equal(up.calls[0]?.body.raw_scores, false);
    assert.equal(scores.length, 4);
    for (const s of scores) assert.ok(s >= 0 && s <= 1);
    assert.ok((scores[0] as number) > (scores[1] as number) && (scores[2] as number) > (scores[3] as number));
    assert.equal(
      tokens,
      docs.reduce((s, d) => s + countTokens('cat sat') + countTokens(d), 0),
    );
  });

  it('openai: embeds through POST {base}/embeddings, reorders by index, shares the reported usage', async () => {
    const e = embedder(openaiEmbeddingFactory, {
      type: 'openai',
      base_url: `${up.url}/v1`,
      model: 'org/embed',
    });
    up.calls.length = 0;
    const texts = ['first text here', 'second', 'the third one is longer than the others'];
    const { vectors, tokens } = await e.embed(texts, neverAborted);
    assert.deepEqual(up.calls[0]?.body, { model: 'org/embed', input: texts, encoding_format: 'float' });
    const tei = embedder(teiEmbeddingFactory, { type: 'tei', base_url: up.url });
    const direct = (await tei.embed(texts, neverAborted)).vectors;
    assert.deepEqual(vectors, direct, 'the fake answers in reverse order: the engine restored input order');
    const reported = texts.reduce((s, t) => s + countTokens(t) + 2, 0);
    assert.equal(
      tokens?.reduce((a, b) => a + b, 0),
      reported,
      'the parts add up to the upstream usage',
    );
    assert.ok((tokens?.[2] as number) > (tokens?.[1] as number));
  });

  it('openai: reranks through POST {base}/rerank and uses the reported token count', async () => {
    const r = ranker(openaiRerankFactory, { type: 'openai', base_url: `${up.url}/v1` });
    up.calls.length = 0;
    const docs = ['bananas', 'the cat sat'];
    const { scores, tokens } = await r.rank('cat sat', docs, neverAborted);
    assert.deepEqual(up.calls[0]?.body, {
      model: 'rerank-up',
      query: 'cat sat',
      documents: docs,
      top_n: 2,
      return_documents: false,
    });
    assert.ok((scores[1] as number) > (scores[0] as number));
    assert.equal(
      tokens,
      docs.reduce((s, d) => s + countTokens('cat sat') + countTokens(d), 0),
    );
  });

  it('passes an upstream 4xx on as a 400 with its message', async () => {
    const e = embedder(teiEmbeddingFactory, { type: 'tei', base_url: up.url, batch: { max_items: 64 } });
    const texts = Array.from({ length: 40 }, (_, i) => `t${i}`);
    await assert.rejects(
      e.embed(texts, neverAborted),
      (err: unknown) =>
        err instanceof ApiError &&
        err.status === 400 &&
        /batch size 40 > maximum allowed batch size 32/.test(err.message),
    );
    up.failWith({
      status: 422,
      body: { error: 'Input validation error: inputs must have less than 512 tokens' },
    });
    try {
      await assert.rejects(e.embed(['x'], neverAborted), isStatus(400, /less than 512 tokens/));
      up.failWith({
        status: 400,
        body: { error: { message: 'This model has a maximum context length of 8192' } },
      });
      const o = embedder(openaiEmbeddingFactory, { type: 'openai', base_url: `${up.url}/v1` });
      await assert.rejects(o.embed(['x'], neverAborted), isStatus(400, /maximum context length of 8192/));
    } finally {
      up.failWith(null);
    }
  });

  it('turns upstream 5xx, auth failures and bad answers into a clean 500, and 429 into a retryable 503', async () => {
    const e = embedder(teiEmbeddingFactory, { type: 'tei', base_url: up.url });
    try {
      up.failWith({ status: 500, body: { error: 'CUDA out of memory at /srv/model.py:42' } });
      await assert.rejects(e.embed(['x'], neverAborted), (err: unknown) => {
        assert.ok(isStatus(500)(err));
        assert.doesNotMatch((err as Error).message, /CUDA|model\.py/, 'no upstream internals');
        return true;
      });
      up.failWith({ status: 401, body: { error: 'bad token' } });
      await assert.rejects(e.embed(['x'], neverAborted), isStatus(500));
      up.failWith({ status: 429, body: { error: 'overloaded' } });
      await assert.rejects(
        e.embed(['x'], neverAborted),
        (err: unknown) => isStatus(503)(err) && (err as ApiError).code === 'service_unavailable',
      );
      up.failWith({ status: 200, body: { not: 'vectors' } });
      await assert.rejects(e.embed(['x'], neverAborted), isStatus(500));
      up.failWith({ status: 200, body: [[1, 2, 3]] });
      await assert.rejects(e.embed(['x'], neverAborted), isStatus(500), 'a vector of the wrong size');
    } finally {
      up.failWith(null);
    }
  });

  it('refused connections and timeouts are a clean 500; a cancel is the cancel reason', async () => {
    const port = await closedPort();
    const refused = embedder(teiEmbeddingFactory, { type: 'tei', base_url: `http://127.0.0.1:${port}` });
    await assert.rejects(refused.embed(['x'], neverAborted), isStatus(500, /failed to answer/));

    const slow = embedder(teiEmbeddingFactory, { type: 'tei', base_url: up.url, timeout_ms: 100 });
    up.failWith('hang');
    try {
      const t0 = performance.now();
      await assert.rejects(slow.embed(['x'], neverAborted), isStatus(500));
      assert.ok(performance.now() - t0 < 3000);
      const ac = new AbortController();
      const p = embedder(teiEmbeddingFactory, { type: 'tei', base_url: up.url }).embed(['x'], ac.signal);
      setTimeout(() => ac.abort(new Error('client left')), 20);
      await assert.rejects(p, /client left/);
    } finally {
      up.failWith(null);
    }
  });

  it('sends the key named by api_key_env, and refuses to start without it', async () => {
    const keyed = await startFakeUpstream({ apiKey: 'sekret' });
    try {
      process.env.EMBED_TEST_KEY = 'sekret';
      const e = embedder(teiEmbeddingFactory, {
        type: 'tei',
        base_url: keyed.url,
        api_key_env: 'EMBED_TEST_KEY',
      });
      assert.equal((await e.embed(['x'], neverAborted)).vectors.length, 1);
      assert.equal(keyed.calls[0]?.headers.authorization, 'Bearer sekret');
      assert.throws(
        () =>
          embedder(teiEmbeddingFactory, { type: 'tei', base_url: keyed.url, api_key_env: 'EMBED_TEST_NOPE' }),
        (err: unknown) => err instanceof EngineConfigError && /EMBED_TEST_NOPE/.test(err.detail),
      );
    } finally {
      delete process.env.EMBED_TEST_KEY;
      await keyed.close();
    }
  });

  it('needs the catalog dimensions and a valid base_url', () => {
    assert.throws(
      () => embedder(teiEmbeddingFactory, { type: 'tei', base_url: up.url }, { dimensions: undefined }),
      EngineConfigError,
    );
    assert.throws(
      () => embedder(openaiEmbeddingFactory, { type: 'openai', base_url: 'ftp://x' }),
      EngineConfigError,
    );
  });

  it('clamps scores into [0, 1], or applies a sigmoid to logits when told', async () => {
    const logits = await startFakeUpstream();
    try {
      logits.failWith({
        status: 200,
        body: {
          results: [
            { index: 0, relevance_score: 2.5 },
            { index: 1, relevance_score: -3 },
          ],
        },
      });
      const plain = ranker(openaiRerankFactory, { type: 'openai', base_url: logits.url });
      assert.deepEqual((await plain.rank('q', ['a', 'b'], neverAborted)).scores, [1, 0]);
      const sig = ranker(openaiRerankFactory, {
        type: 'openai',
        base_url: logits.url,
        score_activation: 'sigmoid',
      });
      const { scores } = await sig.rank('q', ['a', 'b'], neverAborted);
      assert.ok(Math.abs((scores[0] as number) - 1 / (1 + Math.exp(-2.5))) < 1e-12);
      logits.failWith({ status: 200, body: { results: [{ index: 0, relevance_score: 0.3 }] } });
      await assert.rejects(
        plain.rank('q', ['a', 'b'], neverAborted),
        isStatus(500),
        'a document left without a score',
      );
    } finally {
      await logits.close();
    }
  });
});

describe('upstream helpers', () => {
  it('apportion splits a total exactly, in proportion', () => {
    assert.deepEqual(apportion(10, [1, 1, 2]), [3, 2, 5]);
    assert.deepEqual(apportion(7, [0, 0]), [4, 3]);
    assert.deepEqual(apportion(0, [5, 5]), [0, 0]);
    const parts = apportion(1001, [3, 7, 11, 13]);
    assert.equal(
      parts.reduce((a, b) => a + b, 0),
      1001,
    );
  });

  it('errorMessage reads the usual error shapes', () => {
    assert.equal(errorMessage('{"error":{"message":"openai style"}}'), 'openai style');
    assert.equal(errorMessage('{"error":"tei style","error_type":"Validation"}'), 'tei style');
    assert.equal(errorMessage('{"object":"error","message":"vllm style"}'), 'vllm style');
    assert.equal(errorMessage('{"detail":"fastapi style"}'), 'fastapi style');
    assert.equal(errorMessage('{"detail":[{"msg":"field required"},{"msg":"bad"}]}'), 'field required; bad');
    assert.equal(errorMessage('plain text'), 'plain text');
    assert.equal(errorMessage(''), null);
  });
});
