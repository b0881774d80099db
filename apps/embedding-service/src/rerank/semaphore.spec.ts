import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Semaphore } from './semaphore.js';

describe('semaphore', () => {
  it('runs at most `limit` tasks, in FIFO order, and a cancelled waiter leaves the line', async () => {
    const sem = new Semaphore(1);
    const order: string[] = [];
    let release!: () => void;
    const first = sem.run(new AbortController().signal, async () => {
      order.push('first');
      await new Promise<void>((r) => {
        release = r;
      });
    });
    const ac = new AbortController();
    const cancelled = sem.run(ac.signal, async () => order.push('cancelled'));
    const second = sem.run(new AbortController().signal, async () => order.push('second'));
    assert.equal(sem.queued, 2);
    ac.abort(new Error('left'));
    await assert.rejects(cancelled, /left/);
    assert.equal(sem.queued, 1);
    release();
    await first;
    await second;
    assert.deepEqual(order, ['first', 'second']);
    assert.equal(sem.running, 0);
  });
});
