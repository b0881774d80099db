import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { catalogEntry, engineContext, neverAborted } from '../testing/catalog.js';
import { countTokens } from '../tokens.js';
import { Bm25Engine } from './bm25.js';
import type { RerankEngine } from './engine.js';
import { hybridFactory, hybridScores } from './hybrid.js';
import { EngineConfigError } from './settings.js';

const make = (engine: Record<string, unknown> = {}): RerankEngine => {
  const model = catalogEntry({ kind: 'rerank', engine: { type: 'hybrid', ...engine } });
  return hybridFactory.create(model.engine as never, engineContext(model));
};
const order = (scores: number[]) =>
  scores
    .map((s, i) => [s, i] as const)
    .sort((a, b) => b[0] - a[0])
    .map(([, i]) => i);

describe('hybrid ranker', () => {
  it('mixes the two scores with weights normalised to 1, clamped to [0, 1]', () => {
    // semantic cosines in [-1, 1] count as (1 + cos) / 2
    assert.deepEqual(hybridScores([1, 0, 0.5], [-1, 1, 0], { bm25: 3, semantic: 1 }), [0.75, 0.25, 0.5]);
    assert.deepEqual(hybridScores([0.2], [-3], { bm25: 1, semantic: 1 }), [0.1], 'clamped');
    assert.deepEqual(hybridScores([Number.NaN], [0.4], { bm25: 1, semantic: 1 }), [0]);
    assert.deepEqual(hybridScores([0.4], [0.8], { bm25: 0, semantic: 1 }), [0.9]);
  });

  it('finds the paraphrase that BM25 scores 0, and keeps exact matches first', async () => {
    const e = make();
    await e.ready();
    const docs = [
      'Bananas are rich in potassium and taste sweet.',
      'An automobile dealer sells new and used vehicles.',
      'The stock market fell sharply on Monday.',
    ];
    const q = 'where can I buy a car';
    const bm25 = await new Bm25Engine(
      { k1: 1.2, b: 0.75, score_k: 1, split_identifiers: true, max_concurrent: 1 },
      8192,
    ).rank(q, docs, neverAborted);
    assert.deepEqual(bm25.scores, [0, 0, 0], 'no shared word: BM25 cannot tell');
    const r = await e.rank(q, docs, neverAborted);
    assert.equal(order(r.scores)[0], 1, `the car dealer first: ${r.scores}`);
    assert.ok(r.scores.every((s) => s >= 0 && s <= 1));
    assert.equal(r.tokens, countTokens(q) + docs.reduce((s, d) => s + countTokens(d), 0));

    const exact = await e.rank('potassium', docs, neverAborted);
    assert.equal(order(exact.scores)[0], 0);
  });

  it('scores a long document by its best passage too, and is deterministic', async () => {
    const e = make({ passage_words: 20 });
    const filler =
      'The committee reviewed the minutes of the previous meeting and approved the budget. '.repeat(12);
    const docs = [`${filler} Our physicians treat patients at the clinic every day. ${filler}`, filler];
    const a = await e.rank('which doctor can see me', docs, neverAborted);
    const b = await e.rank('which doctor can see me', docs, neverAborted);
    assert.deepEqual(a, b);
    assert.ok((a.scores[0] as number) > (a.scores[1] as number), `${a.scores}`);
  });

  it('refuses weights that are all zero', () => {
    assert.throws(() => make({ weights: { bm25: 0, semantic: 0 } }), EngineConfigError);
  });
});
