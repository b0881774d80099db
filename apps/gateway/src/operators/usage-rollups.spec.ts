import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { wholeWeeks } from './usage-rollups.controller.js';

const d = (s: string) => Date.parse(`${s}T00:00:00Z`);

describe('usage explorer: whole ISO weeks of a day range', () => {
  it('finds the Mondays and the last Sunday inside the range', () => {
    // 2026-10-26 is a Monday, 2026-11-24 a Tuesday: four whole weeks, then two edge days.
    assert.deepEqual(wholeWeeks(d('2026-10-26'), d('2026-11-24')), {
      first: '2026-10-26',
      last: '2026-11-16',
      end: '2026-11-22',
    });
    // From a Wednesday: the first whole week starts the next Monday.
    assert.deepEqual(wholeWeeks(d('2026-10-28'), d('2026-11-26')), {
      first: '2026-11-02',
      last: '2026-11-16',
      end: '2026-11-22',
    });
    // Exactly one week, Monday to Sunday.
    assert.deepEqual(wholeWeeks(d('2026-11-02'), d('2026-11-08')), {
      first: '2026-11-02',
      last: '2026-11-02',
      end: '2026-11-08',
    });
  });

  it('is null when no whole week fits', () => {
    assert.equal(wholeWeeks(d('2026-11-03'), d('2026-11-09')), null); // Tuesday to Monday
    assert.equal(wholeWeeks(d('2026-11-02'), d('2026-11-07')), null); // Monday to Saturday
    assert.equal(wholeWeeks(d('2026-11-05'), d('2026-11-05')), null);
  });
});
