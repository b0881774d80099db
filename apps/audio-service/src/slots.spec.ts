import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Slots } from './slots.js';

describe('Slots', () => {
  it('admits up to its size, hands a released slot to the next waiter, and lets waiters leave on abort', async () => {
    const s = new Slots(1);
    const r1 = await s.acquire();
    let second = false;
    const p2 = s.acquire().then((r) => {
      second = true;
      return r;
    });
    const ac = new AbortController();
    const p3 = s.acquire(ac.signal);
    ac.abort(new Error('gone'));
    await assert.rejects(p3, /gone/);
    await new Promise((r) => setImmediate(r));
    assert.equal(second, false);
    r1();
    const r2 = await p2;
    assert.equal(s.inUse, 1);
    r2();
    r2(); // twice is harmless
    assert.equal(s.inUse, 0);
  });
});
