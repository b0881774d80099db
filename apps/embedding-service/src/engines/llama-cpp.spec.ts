import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { catalogEntry, cosine, engineContext, neverAborted } from '../testing/catalog.js';
import { tinyBertRerankerGguf, tinyLlamaEmbeddingGguf, writeModel } from '../testing/tiny-models.js';
import type { EmbeddingEngine, RerankEngine } from './engine.js';
import { defaultThreads, llamaCppEmbeddingFactory, llamaCppRerankFactory } from './llama-cpp.js';
import { EngineConfigError } from './settings.js';

describe('embedded llama.cpp engines on tiny random-weight GGUFs', () => {
  let dir: string;
  let embedGguf: string;
  let rankGguf: string;
  const open: Array<{ close?(): Promise<void> }> = [];
  const embedder = (engine: Record<string, unknown> = {}, over: Record<string, unknown> = {}) => {
    const model = catalogEntry({
      engine: { type: 'llama-cpp-embedding', gguf: embedGguf, threads: 1, ...engine },
      ...over,
    });
    const e = llamaCppEmbeddingFactory.create(model.engine as never, engineContext(model)) as EmbeddingEngine;
    open.push(e);
    return e;
  };
  const ranker = (engine: Record<string, unknown> = {}, over: Record<string, unknown> = {}) => {
    const model = catalogEntry({
      kind: 'rerank',
      engine: { type: 'llama-cpp-rerank', gguf: rankGguf, threads: 1, ...engine },
      ...over,
    });
    const r = llamaCppRerankFactory.create(model.engine as never, engineContext(model)) as RerankEngine;
    open.push(r);
    return r;
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'embed-llama-'));
    embedGguf = writeModel(join(dir, 'embed.gguf'), tinyLlamaEmbeddingGguf({ contextLength: 256 }));
    rankGguf = writeModel(join(dir, 'rank.gguf'), tinyBertRerankerGguf({ contextLength: 128 }));
  });
  after(async () => {
    for (const e of open) await e.close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it('embeds with the model: its vector size, unit length, deterministic, different texts differ', async () => {
    const e = embedder({}, { dimensions: 64 });
    const info = await e.ready();
    assert.equal(info.dimensions, 64);
    assert.equal(info.maxInputTokens, 255, 'the training context (256) minus one');
    const { vectors } = await e.embed(
      ['the cat sat on the mat', 'the cat sat on the mat', 'river stone'],
      neverAborted,
    );
    const [a, b, c] = vectors as [Float32Array, Float32Array, Float32Array];
    assert.equal(a.length, 64);
    const norm = Math.sqrt(Array.from(a).reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-5, `normalised: ${norm}`);
    assert.deepEqual(a, b);
    assert.ok(cosine(a, c) < 0.9999);
  });

  it("reads token ids in the model's own vocabulary; an id outside it is refused", async () => {
    const e = embedder();
    await e.ready();
    // The tiny vocabulary: <unk> <s> </s>, then the 256 byte tokens (id 3 + byte).
    const bytes = [...Buffer.from('hi cat')].map((b) => 3 + b);
    assert.equal(e.detokenize?.(bytes), 'hi cat');
    assert.throws(() => e.detokenize?.([3 + 104, 1_000_000]), /outside the model's vocabulary/);
  });

  it("counts tokens with the model's tokenizer, BOS included", async () => {
    const e = embedder();
    await e.ready();
    const [short, long] = e.countTokens(['hi', 'hello there, how are you today?']);
    assert.ok((short as number) >= 2 && (long as number) > (short as number), `${short} ${long}`);
  });

  it('caps the context by the catalog context_window and refuses a dimensions mismatch', async () => {
    assert.equal((await embedder({}, { context_window: 64 }).ready()).maxInputTokens, 63);
    await assert.rejects(
      embedder({}, { dimensions: 4096 }).ready(),
      (e: unknown) =>
        e instanceof EngineConfigError && /64-dimension.*4096/.test(e.detail) && !/4096/.test(e.message),
    );
  });

  it('reports a missing GGUF as a configuration error, and tries again on the next request', async () => {
    const model = catalogEntry({ engine: { type: 'llama-cpp-embedding', gguf: join(dir, 'later.gguf') } });
    const e = llamaCppEmbeddingFactory.create(model.engine as never, engineContext(model));
    open.push(e);
    await assert.rejects(
      e.ready(),
      (err: unknown) => err instanceof EngineConfigError && /not found/.test(err.detail),
    );
    writeModel(join(dir, 'later.gguf'), tinyLlamaEmbeddingGguf());
    assert.equal((await e.ready()).dimensions, 64, 'loaded once the file is there');
  });

  it('ranks with a BERT cross-encoder: one score in [0, 1] per document, deterministic', async () => {
    const r = ranker();
    const info = await r.ready();
    assert.equal(info.maxQueryTokens, 64, 'half the 128-token context');
    const docs = ['paris is in france', 'the cat sat', 'dog', ''];
    const one = await r.rank('where is paris', docs, neverAborted);
    const two = await r.rank('where is paris', docs, neverAborted);
    assert.equal(one.scores.length, 4);
    for (const s of one.scores) assert.ok(s >= 0 && s <= 1, `score ${s}`);
    assert.deepEqual(one.scores, two.scores);
    assert.ok(new Set(one.scores).size > 1, 'documents get different scores');
    assert.ok(one.tokens > docs.length * 3, `query + document tokens, got ${one.tokens}`);
    assert.ok(r.countQueryTokens('where is paris') >= 3);
  });

  it('scores a document longer than the context by its chunks', async () => {
    const r = ranker();
    const long = Array.from({ length: 300 }, (_, i) => (i % 2 ? 'cat' : 'dog')).join(' ');
    const { scores } = await r.rank('cat', [long, 'cat'], neverAborted);
    assert.equal(scores.length, 2);
    for (const s of scores) assert.ok(s >= 0 && s <= 1);
  });

  it('refuses a model without a rank head for ranking', async () => {
    await assert.rejects(
      ranker({ gguf: embedGguf }).ready(),
      (e: unknown) => e instanceof EngineConfigError && /cannot rank/.test(e.detail),
    );
  });

  it('never uses more threads than cores', () => {
    assert.ok(defaultThreads(10_000) <= 256);
    assert.ok(defaultThreads() >= 1 && defaultThreads() <= 2);
  });
});
