import type { HourlyUsageRow, Overview } from '@infer/contracts';

const HOUR_S = 3600;

export interface ModelRequests {
  model: string;
  /** Requests over the whole range, the current hour included. */
  requests: number;
  /** Of which in the current, unfinished hour. */
  current: number;
}

/**
 * Requests per model over the last 24 hours (the current hour and the 23 before it):
 * - the hours before the current one from the hourly rollup (GET /admin/usage/hourly);
 * - the current hour from the larger of the rollup's row and the overview's live per-minute counts.
 *   Both count the same requests (the gateway records each one in the ledger and in the Redis minute
 *   counters): the rollup trails by the ledger's lag and by its own refresh (once a minute), the live
 *   counts by the stream's 2 s. Taking the larger never counts a request twice.
 * `now` is the overview's own time when there is one (the server's clock).
 */
export function requestsPerModel24h(
  rows: readonly HourlyUsageRow[],
  live: Pick<Overview, 'at' | 'minute_starts' | 'models'> | undefined,
  nowMs: number,
): { hourStart: number; models: ModelRequests[] } {
  const hourStart = Math.floor((live?.at ?? nowMs) / 1000 / HOUR_S) * HOUR_S;
  const first = hourStart - 23 * HOUR_S;
  const done = new Map<string, number>();
  const rolled = new Map<string, number>();
  for (const r of rows) {
    // A rollup fetched before the hour turned can hold one hour too many.
    if (r.hour < first) continue;
    const into = r.hour >= hourStart ? rolled : done;
    into.set(r.model, (into.get(r.model) ?? 0) + r.requests);
  }
  const counted = new Map<string, number>();
  if (live) {
    const starts = live.minute_starts;
    for (const m of live.models) {
      let n = 0;
      for (let i = 0; i < starts.length; i++)
        if ((starts[i] as number) >= hourStart) n += m.requests_per_min?.[i] ?? 0;
      if (n > 0) counted.set(m.model, n);
    }
  }
  const names = new Set([...done.keys(), ...rolled.keys(), ...counted.keys()]);
  const models: ModelRequests[] = [];
  for (const model of names) {
    const current = Math.max(rolled.get(model) ?? 0, counted.get(model) ?? 0);
    models.push({ model, requests: (done.get(model) ?? 0) + current, current });
  }
  models.sort((a, b) => b.requests - a.requests || a.model.localeCompare(b.model));
  return { hourStart, models };
}
