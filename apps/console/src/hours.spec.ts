import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HourlyUsageRow, OverviewModel } from '@infer/contracts';
import { requestsPerModel24h } from './hours.js';

const H = 3600;
const hourStart = 1_795_500_000 - (1_795_500_000 % H);
const row = (hour: number, model: string, requests: number): HourlyUsageRow => ({
  hour,
  model,
  requests,
  errors: 0,
  total_tokens: 0,
  avg_latency_ms: 0,
});
/** An overview 20 minutes into the hour: a 60-minute window, `perMin` requests in each of its minutes. */
function live(models: Record<string, (minuteStart: number) => number>) {
  const at = (hourStart + 20 * 60 + 30) * 1000;
  const last = Math.floor(at / 60_000);
  const minute_starts = Array.from({ length: 60 }, (_, i) => (last - 59 + i) * 60);
  return {
    at,
    minute_starts,
    models: Object.entries(models).map(
      ([model, f]) => ({ model, requests_per_min: minute_starts.map(f) }) as unknown as OverviewModel,
    ),
  };
}

describe('requests per model over the last 24 hours', () => {
  it('adds the current hour from the live counters when the rollup has none of it yet', () => {
    const rows = [row(hourStart - 2 * H, 'chat-A', 10), row(hourStart - H, 'chat-A', 5)];
    // 3 requests in the current hour (the minute 20 past), 7 in the previous hour (already rolled up).
    const o = live({ 'chat-A': (m) => (m === hourStart + 20 * 60 ? 3 : m === hourStart - 600 ? 7 : 0) });
    const day = requestsPerModel24h(rows, o, 0);
    assert.equal(day.hourStart, hourStart);
    assert.deepEqual(day.models, [{ model: 'chat-A', requests: 18, current: 3 }]);
  });

  it('shows a model seen only in the live counters, and one seen only in the rollup', () => {
    const day = requestsPerModel24h(
      [row(hourStart - 5 * H, 'old', 2)],
      live({ 'chat-B': (m) => (m >= hourStart ? 1 : 0) }),
      0,
    );
    assert.deepEqual(day.models, [
      { model: 'chat-B', requests: 21, current: 21 },
      { model: 'old', requests: 2, current: 0 },
    ]);
  });

  it('never counts the current hour twice: the larger of the rollup and the live counts', () => {
    const o = live({ 'chat-A': (m) => (m >= hourStart ? 1 : 0) }); // 21 so far
    assert.deepEqual(requestsPerModel24h([row(hourStart, 'chat-A', 15)], o, 0).models, [
      { model: 'chat-A', requests: 21, current: 21 },
    ]);
    assert.deepEqual(requestsPerModel24h([row(hourStart, 'chat-A', 30)], o, 0).models, [
      { model: 'chat-A', requests: 30, current: 30 },
    ]);
  });

  it('without a live overview: the rollup alone, on the browser clock; drops an hour past the 24', () => {
    const now = (hourStart + 60) * 1000;
    const day = requestsPerModel24h(
      [row(hourStart - 24 * H, 'gone', 9), row(hourStart - 23 * H, 'chat-A', 1), row(hourStart, 'chat-A', 2)],
      undefined,
      now,
    );
    assert.deepEqual(day.models, [{ model: 'chat-A', requests: 3, current: 2 }]);
  });
});
