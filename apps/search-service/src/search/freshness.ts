import type { TimeWindow } from '../engines/engine.js';

const DAY = 86_400_000;

/**
 * The request's freshness as an absolute window [since, until), from `now`:
 *   pd: the last 24 hours, pw: 7 days, pm: one calendar month back, py: one calendar year back;
 *   `YYYY-MM-DDtoYYYY-MM-DD`: from the start of the first day to the end of the last (UTC), both
 *   days included.
 * Undefined freshness: no window. The schema has already checked the value.
 */
export function freshnessWindow(freshness: string | undefined, now: Date): TimeWindow | undefined {
  if (!freshness) return undefined;
  const t = now.getTime();
  switch (freshness) {
    case 'pd':
      return { since: new Date(t - DAY) };
    case 'pw':
      return { since: new Date(t - 7 * DAY) };
    case 'pm': {
      const d = new Date(t);
      d.setUTCMonth(d.getUTCMonth() - 1);
      return { since: d };
    }
    case 'py': {
      const d = new Date(t);
      d.setUTCFullYear(d.getUTCFullYear() - 1);
      return { since: d };
    }
    default: {
      const [from, to] = freshness.split('to') as [string, string];
      const since = new Date(`${from}T00:00:00.000Z`);
      const until = new Date(new Date(`${to}T00:00:00.000Z`).getTime() + DAY);
      return { since, until };
    }
  }
}
