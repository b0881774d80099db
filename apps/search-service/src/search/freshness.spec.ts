import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freshnessWindow } from './freshness.js';

const now = new Date('2025-03-31T12:00:00Z');
const iso = (d: Date | undefined) => d?.toISOString();

describe('freshnessWindow', () => {
  it('has no window without freshness', () => {
    assert.equal(freshnessWindow(undefined, now), undefined);
  });

  it('reaches back a day, a week, a calendar month or year from now', () => {
    assert.equal(iso(freshnessWindow('pd', now)?.since), '2025-03-30T12:00:00.000Z');
    assert.equal(iso(freshnessWindow('pw', now)?.since), '2025-03-24T12:00:00.000Z');
    assert.equal(iso(freshnessWindow('pm', now)?.since), '2025-03-03T12:00:00.000Z'); // Feb 31 rolls over
    assert.equal(iso(freshnessWindow('py', now)?.since), '2024-03-31T12:00:00.000Z');
    assert.equal(freshnessWindow('pw', now)?.until, undefined);
  });

  it('takes a date range with both days included (UTC)', () => {
    const w = freshnessWindow('2024-02-28to2024-03-01', now);
    assert.equal(iso(w?.since), '2024-02-28T00:00:00.000Z');
    assert.equal(iso(w?.until), '2024-03-02T00:00:00.000Z');
  });
});
