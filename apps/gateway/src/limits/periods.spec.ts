import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  billingPeriod,
  dayWindow,
  formatResetDuration,
  minuteWindow,
  monthWindow,
  retryAfterSeconds,
} from './periods.js';

const iso = (ms: number) => new Date(ms).toISOString();

describe('limit windows (UTC)', () => {
  it('minute, day and calendar month', () => {
    const t = Date.UTC(2031, 11, 31, 23, 59, 59, 999);
    assert.equal(iso(minuteWindow(t).start), '2031-12-31T23:59:00.000Z');
    assert.equal(iso(minuteWindow(t).end), '2032-01-01T00:00:00.000Z');
    assert.equal(dayWindow(t).id, '20311231');
    assert.equal(iso(dayWindow(t).end), '2032-01-01T00:00:00.000Z');
    assert.equal(monthWindow(t).id, '203112');
    assert.equal(iso(monthWindow(t).end), '2032-01-01T00:00:00.000Z');
    assert.equal(monthWindow(t + 1).id, '203201');
  });

  it('billing periods start on the anchor day and time, on the last day of shorter months', () => {
    const anchor = new Date(Date.UTC(2030, 0, 31, 10, 0, 0));
    const feb = billingPeriod(anchor, Date.UTC(2031, 1, 28, 10, 0, 0));
    assert.equal(iso(feb.start), '2031-02-28T10:00:00.000Z');
    assert.equal(iso(feb.end), '2031-03-31T10:00:00.000Z');
    const before = billingPeriod(anchor, Date.UTC(2031, 1, 28, 9, 59, 59, 999));
    assert.equal(iso(before.start), '2031-01-31T10:00:00.000Z');
    assert.equal(iso(before.end), '2031-02-28T10:00:00.000Z');
    const leap = billingPeriod(anchor, Date.UTC(2032, 1, 29, 12));
    assert.equal(iso(leap.start), '2032-02-29T10:00:00.000Z');
    const january = billingPeriod(new Date(Date.UTC(2030, 5, 15)), Date.UTC(2031, 0, 3));
    assert.equal(iso(january.start), '2030-12-15T00:00:00.000Z');
    assert.equal(iso(january.end), '2031-01-15T00:00:00.000Z');
    const december = billingPeriod(new Date(Date.UTC(2030, 5, 15)), Date.UTC(2031, 11, 20));
    assert.equal(iso(december.end), '2032-01-15T00:00:00.000Z');
  });

  it('formats resets as OpenAI does and Retry-After in whole seconds', () => {
    assert.equal(formatResetDuration(120), '120ms');
    assert.equal(formatResetDuration(17_000), '17s');
    assert.equal(formatResetDuration(16_001), '17s');
    assert.equal(formatResetDuration(65_000), '1m5s');
    assert.equal(formatResetDuration(4 * 3_600_000 - 60_000), '3h59m0s');
    assert.equal(formatResetDuration(-5), '0s');
    assert.equal(retryAfterSeconds(1), 1);
    assert.equal(retryAfterSeconds(0), 1);
    assert.equal(retryAfterSeconds(30_001), 31);
  });
});
