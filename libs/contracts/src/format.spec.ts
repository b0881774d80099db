import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCount } from './format.js';

describe('formatCount', () => {
  it('writes integers as toLocaleString("en-US") does', () => {
    const samples = [0, 1, 12, 999, 1000, 1001, 32_000, 99_999, 100_000, 123_456, 1_000_000, 4_294_967_295];
    samples.push(Number.MAX_SAFE_INTEGER, -1, -999, -1000, -1_234_567);
    for (let i = 0; i < 200; i++) samples.push(Math.floor(Math.random() * 10 ** (1 + (i % 15))));
    for (const n of samples) assert.equal(formatCount(n), n.toLocaleString('en-US'), String(n));
  });

  it('falls back to Intl for fractions and non-finite numbers', () => {
    for (const n of [1234.5, 0.25, Number.POSITIVE_INFINITY, Number.NaN, 2 ** 60]) {
      assert.equal(formatCount(n), n.toLocaleString('en-US'));
    }
  });
});
