import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { abortableDelay, untilAborted } from './abort.js';

describe('abort helpers', () => {
  it('untilAborted settles like the promise, or rejects with the reason at abort', async () => {
    assert.equal(await untilAborted(Promise.resolve(7), new AbortController().signal), 7);
    await assert.rejects(untilAborted(Promise.reject(new Error('x')), new AbortController().signal), /x/);
    const ac = new AbortController();
    const never = new Promise<number>(() => undefined);
    const p = untilAborted(never, ac.signal);
    ac.abort(new Error('gone'));
    await assert.rejects(p, /gone/);
    await assert.rejects(untilAborted(Promise.resolve(1), ac.signal), /gone/, 'already aborted');
  });

  it('abortableDelay waits, or rejects at once when aborted', async () => {
    const t0 = Date.now();
    await abortableDelay(30, new AbortController().signal);
    assert.ok(Date.now() - t0 >= 25);
    const ac = new AbortController();
    const p = abortableDelay(10_000, ac.signal);
    const t1 = Date.now();
    ac.abort(new Error('stop'));
    await assert.rejects(p, /stop/);
    assert.ok(Date.now() - t1 < 1000);
  });
});
