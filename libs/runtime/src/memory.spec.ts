import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { collectAndTrim, IdleHeapTrim, idleHeapTrimUsers, mallocTrim, startIdleHeapTrim } from './memory.js';

const MiB = 1024 * 1024;

/** A trim over a scripted process: RSS and event-loop utilization set by the test, collections counted. */
function scripted(opts: { afterCollect: number }) {
  const state = { rss: 200 * MiB, busy: 0, collected: 0 };
  const trim = new IdleHeapTrim({
    rss: () => state.rss,
    utilization: () => state.busy,
    collect: () => {
      state.collected++;
      state.rss = opts.afterCollect;
    },
  });
  return { state, trim };
}

describe('IdleHeapTrim', () => {
  it('collects once when idle after start-up, then only after the heap grew again while idle', () => {
    const { state, trim } = scripted({ afterCollect: 160 * MiB });
    assert.equal(trim.check(), true, "start-up's garbage is worth one collection");
    assert.equal(state.collected, 1);
    state.rss = 180 * MiB; // +20 MiB: below the 32 MiB threshold
    assert.equal(trim.check(), false);
    state.rss = 380 * MiB; // a burst left 220 MiB behind
    state.busy = 0.6; // still under load: never
    assert.equal(trim.check(), false);
    state.busy = 0.01; // idle again: after start-up, three idle intervals in a row
    assert.equal(trim.check(), false);
    assert.equal(trim.check(), false);
    assert.equal(trim.check(), true);
    assert.equal(state.collected, 2);
    assert.equal(trim.check(), false, 'RSS after the collection is the new reference');
  });

  it('does not collect again and again a heap that really holds more', () => {
    const { state, trim } = scripted({ afterCollect: 300 * MiB });
    state.rss = 300 * MiB;
    assert.equal(trim.check(), true);
    for (let i = 0; i < 5; i++) assert.equal(trim.check(), false);
    assert.equal(state.collected, 1);
  });

  it('follows RSS down when V8 gave memory back by itself', () => {
    const { state, trim } = scripted({ afterCollect: 250 * MiB });
    assert.equal(trim.check(), true); // reference 250 MiB
    state.rss = 150 * MiB; // V8 shrank the heap on its own
    assert.equal(trim.check(), false);
    state.rss = 190 * MiB; // +40 MiB over 150, although below the old reference
    assert.equal(trim.check(), true, 'the third idle interval in a row');
  });

  it('after start-up, waits for idle intervals in a row: a short pause between bursts is not collected', () => {
    const { state, trim } = scripted({ afterCollect: 160 * MiB });
    assert.equal(trim.check(), true);
    state.rss = 300 * MiB;
    for (let burst = 0; burst < 4; burst++) {
      state.busy = 0.7;
      assert.equal(trim.check(), false);
      state.busy = 0; // two idle intervals, then load again
      assert.equal(trim.check(), false);
      assert.equal(trim.check(), false);
    }
    assert.equal(state.collected, 1);
    assert.equal(trim.check(), true, 'the third idle interval in a row');
    const custom = new IdleHeapTrim({
      idleIntervals: 1,
      rss: () => state.rss,
      utilization: () => state.busy,
      collect: () => {},
    });
    assert.equal(custom.check(), true);
    state.rss = 400 * MiB;
    state.busy = 0.7;
    assert.equal(custom.check(), false);
    state.busy = 0;
    assert.equal(custom.check(), true, 'idleIntervals: 1 collects on the first idle interval after load');
  });

  it('really collects: the default collection runs a full GC in this process', async () => {
    const trim = new IdleHeapTrim({ utilization: () => 0 });
    const ref = (() => new WeakRef(Array.from({ length: 100_000 }, (_, i) => ({ i }))))();
    // A WeakRef keeps its target for the rest of the job that made it.
    await new Promise((r) => setImmediate(r));
    assert.equal(trim.check(), true);
    assert.equal(ref.deref(), undefined);
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'no global gc() leaks out');
  });
});

/** glibc's version where this process runs on glibc (the platform's images and CI machines do). */
const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
  ?.glibcVersionRuntime;

/**
 * Many small blocks from malloc's arena (Buffer.allocUnsafeSlow: one malloc'd backing store each, below
 * the mmap threshold), one in ten kept: the rest become free chunks between live ones once collected,
 * pages glibc keeps. Returns the kept ones.
 */
function fragmentMalloc(): Buffer[] {
  const all = Array.from({ length: 30_000 }, (_, i) => Buffer.allocUnsafeSlow(1_000 + (i % 7) * 300).fill(1));
  return all.filter((_, i) => i % 10 === 0);
}

describe("the idle collection gives malloc's free pages back (glibc malloc_trim through node:ffi)", () => {
  it('collectAndTrim: the collection frees the blocks, the trim returns their pages', {
    skip: !glibc && 'not on glibc',
  }, () => {
    assert.ok(mallocTrim(), 'node:ffi and glibc malloc_trim are found in this process');
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (o: { type: 'major'; execution: 'sync' }) => void;
    const kept = fragmentMalloc();
    gc({ type: 'major', execution: 'sync' });
    const afterGc = process.memoryUsage.rss();
    collectAndTrim()();
    const afterTrim = process.memoryUsage.rss();
    assert.ok(
      afterGc - afterTrim > 20 * MiB,
      `the trim gave back ${((afterGc - afterTrim) / MiB).toFixed(1)} MiB after the collection (expected > 20; the last-resort collection alone gives back ~7-10)`,
    );
    assert.equal(kept.length, 3_000);
    assert.ok(
      kept.every((b) => b[0] === 1),
      'the live blocks are untouched',
    );
  });

  it('mallocTrim keeps the ExperimentalWarning of node:ffi out of the logs and puts process.emitWarning back', {
    skip: !glibc && 'not on glibc',
  }, async () => {
    // In a fresh process: Node warns once per process, on the first load of node:ffi, and prints the
    // warning on a later tick, so only a process of its own shows what a service's log would.
    const script = `
      import { mallocTrim } from ${JSON.stringify(new URL('./memory.ts', import.meta.url).href)};
      const emitWarning = process.emitWarning;
      const trim = mallocTrim();
      const restored = process.emitWarning === emitWarning;
      setImmediate(() => console.log(JSON.stringify({ trimmed: typeof trim?.(), restored })));`;
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--conditions=source', '--import', './tools/ts-register.js', '--input-type=module', '-e', script],
      { cwd: root, timeout: 60_000 },
    );
    assert.deepEqual(JSON.parse(stdout), { trimmed: 'number', restored: true });
    assert.doesNotMatch(stderr, /ExperimentalWarning|FFI/);
  });
});

describe('startIdleHeapTrim (one per process)', () => {
  it('is shared by the apps of a process and stops with the last of them; a second stop() counts once', () => {
    const before = idleHeapTrimUsers();
    const a = startIdleHeapTrim();
    const b = startIdleHeapTrim();
    assert.equal(idleHeapTrimUsers(), before + 2);
    a.stop();
    a.stop();
    assert.equal(idleHeapTrimUsers(), before + 1);
    b.stop();
    assert.equal(idleHeapTrimUsers(), before);
  });
});
