import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InflightTable, NumberedTable } from './inflight-table.js';

describe('InflightTable', () => {
  it('gets, lists and removes entries like a Map', () => {
    const t = new InflightTable<string, { n: number }>();
    t.set('a', { n: 1 });
    t.set('b', { n: 2 });
    assert.equal(t.size, 2);
    assert.deepEqual(t.get('a'), { n: 1 });
    assert.equal(t.delete('a'), true);
    assert.equal(t.delete('a'), false);
    assert.equal(t.get('a'), undefined);
    assert.equal(t.size, 1);
    assert.deepEqual([...t.values()], [{ n: 2 }]);
    assert.deepEqual([...t.entries()], [['b', { n: 2 }]]);
  });

  it('deleting while iterating leaves out what was deleted', () => {
    const t = new InflightTable<number, string>();
    for (let i = 0; i < 5; i++) t.set(i, `v${i}`);
    const seen: string[] = [];
    for (const [k, v] of t.entries()) {
      seen.push(v);
      t.delete(k + 1);
    }
    assert.deepEqual(seen, ['v0', 'v2', 'v4']);
  });

  it('NumberedTable hands out distinct small-integer keys', () => {
    const t = new NumberedTable<string>();
    const keys = Array.from({ length: 1000 }, () => t.nextKey());
    assert.equal(new Set(keys).size, 1000);
    assert.ok(keys.every((k) => Number.isInteger(k) && k > 0 && k <= 0x3fffffff));
  });
});
