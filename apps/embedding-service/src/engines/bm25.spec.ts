import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { catalogEntry, engineContext, neverAborted } from '../testing/catalog.js';
import { countTokens } from '../tokens.js';
import { bm25Factory } from './bm25.js';
import type { RerankEngine } from './engine.js';

const make = (engine: Record<string, unknown> = {}, over: Record<string, unknown> = {}): RerankEngine => {
  const model = catalogEntry({ kind: 'rerank', engine: { type: 'bm25', ...engine }, ...over });
  return bm25Factory.create(model.engine as never, engineContext(model));
};

const DOCS = ['Paris is the capital of France', 'Berlin is the capital of Germany', 'Bananas are yellow'];

describe('bm25 engine', () => {
  it('ranks by shared rare words, with scores in [0, 1] and 0 for no overlap', async () => {
    const { scores } = await make().rank('capital of France', DOCS, neverAborted);
    const [paris, berlin, bananas] = scores as [number, number, number];
    assert.ok(paris > berlin && berlin > bananas);
    assert.equal(bananas, 0);
    for (const s of scores) assert.ok(s >= 0 && s <= 1);
  });

  it('maps BM25 into [0, 1] as s / (s + score_k)', async () => {
    // One document, one query word, tf 1, |d| = avgdl: s = idf * (k1 + 1) / (1 + k1) = idf.
    const idf = Math.log(1 + 0.5 / 1.5);
    const { scores } = await make().rank('paris', ['paris'], neverAborted);
    assert.ok(Math.abs((scores[0] as number) - idf / (idf + 1)) < 1e-12);
    const k2 = await make({ score_k: 2 }).rank('paris', ['paris'], neverAborted);
    assert.ok(Math.abs((k2.scores[0] as number) - idf / (idf + 2)) < 1e-12);
  });

  it('matches code identifiers by their parts, and ignores case and punctuation', async () => {
    const { scores } = await make().rank(
      'parse json value',
      ['function parseJsonValue(text) {}', 'function renderHtml(node) {}'],
      neverAborted,
    );
    assert.ok((scores[0] as number) > 0.5 && scores[1] === 0);
    const punct = await make().rank('???', ['a?', 'b'], neverAborted);
    assert.deepEqual(punct.scores, [0, 0]);
  });

  it('counts the query and each document once', async () => {
    const { tokens } = await make().rank('capital of France', DOCS, neverAborted);
    assert.equal(tokens, countTokens('capital of France') + DOCS.reduce((s, d) => s + countTokens(d), 0));
  });

  it('limits the query by the context window', async () => {
    const e = make({}, { context_window: 50 });
    assert.deepEqual(await e.ready(), { maxQueryTokens: 50, maxConcurrent: 2 });
    assert.equal(e.countQueryTokens('Hello, world!'), 4);
  });

  it('stops when the request is cancelled', async () => {
    const ac = new AbortController();
    ac.abort(new Error('gone'));
    await assert.rejects(make().rank('q', ['d'], ac.signal), /gone/);
  });
});
