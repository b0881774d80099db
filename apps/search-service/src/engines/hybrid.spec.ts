import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cosine, documentText, hybridOrder, SEARCH_HYBRID_WEIGHTS } from './hybrid.js';

describe('local search hybrid order', () => {
  it('mixes the full-text rank (relative to the best) with (1 + cos) / 2 by the documented weights', () => {
    assert.deepEqual(SEARCH_HYBRID_WEIGHTS, { lexical: 0.6, semantic: 0.4 });
    const hits = [
      { url: 'a', rank: 0.4 },
      { url: 'b', rank: 0.2 },
      { url: 'c', rank: 0.4 },
    ];
    const out = hybridOrder(hits, [0, 1, -1]);
    assert.deepEqual(
      out.map((h) => h.url),
      ['a', 'b', 'c'],
    );
    assert.ok(Math.abs((out[0]?.relevance as number) - (0.6 + 0.4 * 0.5)) < 1e-12);
    assert.ok(Math.abs((out[1]?.relevance as number) - (0.6 * 0.5 + 0.4)) < 1e-12);
    assert.ok(Math.abs((out[2]?.relevance as number) - 0.6) < 1e-12);
  });

  it('lets the vectors decide between equal full-text ranks, and keeps the full-text order on ties', () => {
    const hits = [
      { url: 'x', rank: 0.1 },
      { url: 'y', rank: 0.1 },
      { url: 'z', rank: 0.1 },
    ];
    assert.deepEqual(
      hybridOrder(hits, [0.1, 0.7, 0.1]).map((h) => h.url),
      ['y', 'x', 'z'],
    );
    assert.deepEqual(
      hybridOrder(hits, [Number.NaN, Number.NaN, Number.NaN]).map((h) => h.url),
      ['x', 'y', 'z'],
    );
  });

  it('cosine of vectors of other sizes is 0; the text embedded is the title, then the body, capped', () => {
    assert.equal(cosine(new Float32Array([1, 0]), new Float32Array([1, 0, 0])), 0);
    assert.ok(Math.abs(cosine(new Float32Array([1, 1]), new Float32Array([2, 2])) - 1) < 1e-6);
    assert.equal(documentText({ title: 'T', body: 'b' }), 'T\nb');
    assert.equal(documentText({ title: 'T', body: 'x'.repeat(20_000) }).length, 8_000);
  });
});
