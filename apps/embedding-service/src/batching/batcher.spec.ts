import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type BatchSettings, BatchSettingsSchema } from '../engines/settings.js';
import { DynamicBatcher } from './batcher.js';

interface Item {
  text: string;
  tokens: number;
}

/** A recording engine: each call waits for `gate` (when set) and echoes its texts upper-cased. */
function recorder(opts: { delayMs?: number; fail?: (texts: string[]) => Error | null } = {}) {
  const calls: string[][] = [];
  const signals: AbortSignal[] = [];
  let gate: Promise<void> | null = null;
  let open: (() => void) | null = null;
  return {
    calls,
    signals,
    hold() {
      gate = new Promise((r) => {
        open = r;
      });
    },
    release() {
      open?.();
      gate = null;
    },
    run: async (items: Item[], signal: AbortSignal) => {
      const texts = items.map((i) => i.text);
      calls.push(texts);
      signals.push(signal);
      if (gate) await gate;
      if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
      const err = opts.fail?.(texts);
      if (err) throw err;
      return texts.map((t) => t.toUpperCase());
    },
  };
}

const settings = (s: Partial<BatchSettings>) => BatchSettingsSchema.parse(s);
const items = (...texts: string[]) => texts.map((text) => ({ text, tokens: text.length }));
const live = () => new AbortController().signal;
const tick = () => new Promise((r) => setImmediate(r));

describe('dynamic batcher', () => {
  it('merges concurrent requests into one call and splits the results back in order', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({ max_items: 64, max_wait_ms: 20, max_concurrent: 2 }));
    e.hold();
    const busy = b.submit(items('busy'), live());
    await tick();
    const all = Promise.all([
      b.submit(items('a', 'b'), live()),
      b.submit(items('c'), live()),
      b.submit(items('d', 'e', 'f'), live()),
    ]);
    while (e.calls.length < 2) await new Promise((r) => setTimeout(r, 2));
    e.release();
    const [r1, r2, r3] = await all;
    await busy;
    assert.deepEqual(e.calls, [['busy'], ['a', 'b', 'c', 'd', 'e', 'f']]);
    assert.deepEqual(r1, ['A', 'B']);
    assert.deepEqual(r2, ['C']);
    assert.deepEqual(r3, ['D', 'E', 'F']);
    assert.deepEqual(b.stats, { batches: 2, items: 7, largest: 6 });
  });

  it('keeps each batch within max_items and max_tokens, and spreads one large request', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({ max_items: 3, max_tokens: 1000, max_wait_ms: 0 }));
    const r = await b.submit(items('a', 'b', 'c', 'd', 'e', 'f', 'g'), live());
    assert.deepEqual(r, ['A', 'B', 'C', 'D', 'E', 'F', 'G']);
    assert.deepEqual(e.calls, [['a', 'b', 'c'], ['d', 'e', 'f'], ['g']]);

    const t = recorder();
    const bt = new DynamicBatcher(t.run, settings({ max_items: 100, max_tokens: 5, max_wait_ms: 0 }));
    // Token budget 5: 'aa'+'bbb' fit, 'cccccccc' is larger than the budget and goes alone, then 'd'.
    assert.deepEqual(await bt.submit(items('aa', 'bbb', 'cccccccc', 'd'), live()), [
      'AA',
      'BBB',
      'CCCCCCCC',
      'D',
    ]);
    assert.deepEqual(t.calls, [['aa', 'bbb'], ['cccccccc'], ['d']]);
  });

  it('starts at once on an idle engine; under load waits at most max_wait_ms for company', async () => {
    const e = recorder();
    // A 1 s budget (the most allowed): long enough that "at once" and "waited the budget" stay apart on a busy machine.
    const b = new DynamicBatcher(e.run, settings({ max_items: 3, max_wait_ms: 1_000, max_concurrent: 2 }));
    const t0 = performance.now();
    await b.submit(items('solo'), live());
    assert.ok(performance.now() - t0 < 500, 'a lone request on an idle engine does not wait');

    e.hold();
    const busy = b.submit(items('busy'), live());
    await tick();
    // One call in flight, one slot free: the next item waits for company, up to the time budget.
    const t1 = performance.now();
    const waiting = b.submit(items('w'), live());
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(e.calls.length, 2, 'still waiting for company');
    while (e.calls.length < 3) await new Promise((r) => setTimeout(r, 2));
    const waited = performance.now() - t1;
    assert.ok(waited >= 990 && waited < 30_000, `waited the time budget: ${waited} ms`);
    e.release();
    await Promise.all([waiting, busy]);

    e.hold();
    const busy2 = b.submit(items('busy2'), live());
    await tick();
    const t2 = performance.now();
    const full = [b.submit(items('x'), live()), b.submit(items('y'), live()), b.submit(items('z'), live())];
    await tick();
    assert.ok(performance.now() - t2 < 500, 'a full batch leaves at once');
    assert.deepEqual(e.calls.at(-1), ['x', 'y', 'z']);
    e.release();
    await Promise.all([...full, busy2]);
    assert.deepEqual(e.calls, [['solo'], ['busy'], ['w'], ['busy2'], ['x', 'y', 'z']]);
  });

  it('lets items pile up while the engine is busy, then sends them together', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({ max_items: 64, max_wait_ms: 0, max_concurrent: 1 }));
    e.hold();
    const first = b.submit(items('first'), live());
    await tick();
    const later = [b.submit(items('p'), live()), b.submit(items('q'), live()), b.submit(items('r'), live())];
    await tick();
    assert.equal(e.calls.length, 1, 'one call in flight, the rest waits');
    assert.equal(b.pending, 3);
    e.release();
    assert.deepEqual(await first, ['FIRST']);
    assert.deepEqual(await Promise.all(later), [['P'], ['Q'], ['R']]);
    assert.deepEqual(e.calls, [['first'], ['p', 'q', 'r']]);
  });

  it('runs up to max_concurrent calls at once', async () => {
    let running = 0;
    let most = 0;
    const b = new DynamicBatcher(
      async (xs: Item[]) => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        return xs.map((x) => x.text);
      },
      settings({ max_items: 1, max_wait_ms: 0, max_concurrent: 3 }),
    );
    await Promise.all(Array.from({ length: 9 }, (_, i) => b.submit(items(`t${i}`), live())));
    assert.equal(most, 3);
  });

  it('with batching disabled, never merges two requests', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({ enabled: false, max_items: 64, max_wait_ms: 50 }));
    e.hold();
    const all = [
      b.submit(items('a', 'b'), live()),
      b.submit(items('c'), live()),
      b.submit(items('d'), live()),
    ];
    await tick();
    e.release();
    assert.deepEqual(await Promise.all(all), [['A', 'B'], ['C'], ['D']]);
    assert.deepEqual(e.calls, [['a', 'b'], ['c'], ['d']]);
  });

  it('removes a cancelled request from the pending batch and rejects it with the reason', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({ max_items: 64, max_wait_ms: 0, max_concurrent: 1 }));
    e.hold();
    const busy = b.submit(items('busy'), live());
    await tick();
    const ac = new AbortController();
    const cancelled = b.submit(items('gone1', 'gone2'), ac.signal);
    const kept = b.submit(items('kept'), live());
    assert.equal(b.pending, 3);
    ac.abort(new Error('client left'));
    await assert.rejects(cancelled, /client left/);
    assert.equal(b.pending, 1);
    e.release();
    await busy;
    assert.deepEqual(await kept, ['KEPT']);
    assert.deepEqual(e.calls, [['busy'], ['kept']], 'the engine never saw the cancelled texts');
  });

  it('aborts an engine call once every request in it is cancelled, not before', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({ max_items: 64, max_wait_ms: 5, max_concurrent: 2 }));
    e.hold();
    const busy = b.submit(items('busy'), live());
    await tick();
    const a1 = new AbortController();
    const a2 = new AbortController();
    const p1 = b.submit(items('x'), a1.signal);
    const p2 = b.submit(items('y'), a2.signal);
    while (e.calls.length < 2) await new Promise((r) => setTimeout(r, 1));
    assert.deepEqual(e.calls[1], ['x', 'y']);
    const signal = e.signals[1];
    a1.abort(new Error('one'));
    await assert.rejects(p1, /one/);
    assert.equal(signal?.aborted, false, 'the other request still needs the call');
    a2.abort(new Error('two'));
    await assert.rejects(p2, /two/);
    assert.equal(signal?.aborted, true);
    assert.equal(e.signals[0]?.aborted, false);
    e.release();
    await busy;
  });

  it('rejects at once when already cancelled, and resolves empty input without a call', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({}));
    const ac = new AbortController();
    ac.abort(new Error('early'));
    await assert.rejects(b.submit(items('a'), ac.signal), /early/);
    assert.deepEqual(await b.submit([], live()), []);
    assert.equal(e.calls.length, 0);
  });

  it('fails the requests of a failed call only, dropping their queued items', async () => {
    const e = recorder({ fail: (t) => (t.includes('bad') ? new Error('engine broke') : null) });
    const b = new DynamicBatcher(e.run, settings({ max_items: 2, max_wait_ms: 0, max_concurrent: 1 }));
    e.hold();
    const first = b.submit(items('ok1'), live());
    await tick();
    // Queue: bad, bad-tail (request 2), fine (request 3). Batches of 2: [bad, bad-tail] fails, [fine] runs.
    const failing = b.submit(items('bad', 'bad-tail'), live());
    const fine = b.submit(items('fine'), live());
    e.release();
    await first;
    await assert.rejects(failing, /engine broke/);
    assert.deepEqual(await fine, ['FINE']);

    const e2 = recorder({ fail: (t) => (t.includes('bad') ? new Error('engine broke') : null) });
    const b2 = new DynamicBatcher(e2.run, settings({ max_items: 1, max_wait_ms: 0, max_concurrent: 1 }));
    await assert.rejects(b2.submit(items('bad', 'never'), live()), /engine broke/);
    await tick();
    assert.deepEqual(e2.calls, [['bad']], 'the rest of a failed request is not sent');
    assert.equal(b2.pending, 0);
  });

  it('rejects a call that returns the wrong number of results', async () => {
    const b = new DynamicBatcher(async () => ['only one'], settings({ max_wait_ms: 0 }));
    await assert.rejects(b.submit(items('a', 'b'), live()), /returned 1 results for 2 items/);
  });

  it('rejects what is queued when closed', async () => {
    const e = recorder();
    const b = new DynamicBatcher(e.run, settings({ max_wait_ms: 0, max_concurrent: 1 }));
    e.hold();
    const busy = b.submit(items('busy'), live());
    await tick();
    const queued = b.submit(items('queued'), live());
    b.close();
    await assert.rejects(queued, /closed/);
    await assert.rejects(b.submit(items('late'), live()), /closed/);
    e.release();
    assert.deepEqual(await busy, ['BUSY']);
  });
});
