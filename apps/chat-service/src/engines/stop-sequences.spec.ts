import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StopSequenceFilter } from './stop-sequences.js';

function run(stops: string[], pieces: string[]): { out: string[]; stopped: boolean } {
  const f = new StopSequenceFilter(stops);
  const out: string[] = [];
  for (const p of pieces) {
    const t = f.push(p);
    if (t) out.push(t);
    if (f.stopped) return { out, stopped: true };
  }
  const rest = f.flush();
  if (rest) out.push(rest);
  return { out, stopped: false };
}

describe('StopSequenceFilter', () => {
  it('passes text through without stop sequences', () => {
    assert.deepEqual(run([], ['a', ' b']), { out: ['a', ' b'], stopped: false });
  });

  it('cuts before a stop sequence spread over several pieces, emitting nothing past it', () => {
    const r = run(['END'], ['one', ' two E', 'N', 'D three']);
    assert.equal(r.out.join(''), 'one two ');
    assert.equal(r.stopped, true);
  });

  it('releases held text that turned out not to be a stop', () => {
    const r = run(['END'], ['one E', 'N', 'x']);
    assert.equal(r.out.join(''), 'one ENx');
    assert.equal(r.stopped, false);
    const r2 = run(['END'], ['one E']);
    assert.equal(r2.out.join(''), 'one E', 'flushed at the end');
  });

  it('stops at the earliest of several stop sequences', () => {
    assert.equal(run(['yy', 'b'], ['a b yy']).out.join(''), 'a ');
  });

  it('names the stop sequence that matched: the earliest, across pieces; none before or without a match', () => {
    const f = new StopSequenceFilter(['yy', 'b', 'END']);
    assert.equal(f.push('a E'), 'a ');
    assert.equal(f.matched, null, 'a held prefix is not a match');
    f.push('N');
    f.push('D b');
    assert.equal(f.matched, 'END');
    const g = new StopSequenceFilter(['yy', 'b']);
    g.push('a b yy');
    assert.equal(g.matched, 'b');
    const h = new StopSequenceFilter(['END']);
    h.push('no stop here');
    h.flush();
    assert.equal(h.matched, null);
  });

  it('ignores empty stop strings', () => {
    assert.deepEqual(run([''], ['a']), { out: ['a'], stopped: false });
  });
});
