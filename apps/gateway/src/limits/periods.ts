/**
 * The time windows of the limits, all in UTC and all computed from one clock reading, so that the
 * gateway replicas (and a test's injected clock) agree on where a window starts and ends.
 */
export interface Window {
  /** Part of the Redis key: identifies this window among its kind. */
  id: string;
  /** Epoch ms, inclusive. */
  start: number;
  /** Epoch ms, exclusive. */
  end: number;
}

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

export function minuteWindow(now: number): Window {
  const start = Math.floor(now / MINUTE_MS) * MINUTE_MS;
  return { id: String(start / MINUTE_MS), start, end: start + MINUTE_MS };
}

export function dayWindow(now: number): Window {
  const start = Math.floor(now / DAY_MS) * DAY_MS;
  const d = new Date(start);
  return { id: ymd(d), start, end: start + DAY_MS };
}

/** The calendar month (UTC) that holds `now`. */
export function monthWindow(now: number): Window {
  const d = new Date(now);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { id: `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}`, start, end };
}

/**
 * The member's billing period that holds `now`. Periods start every month on the anchor's day of month
 * and time of day (UTC); in a month without that day (an anchor on the 31st in April) the period starts
 * on the month's last day at that time.
 */
export function billingPeriod(anchor: Date | number, now: number): Window {
  const a = new Date(anchor);
  const day = a.getUTCDate();
  const timeOfDay = a.getTime() - Date.UTC(a.getUTCFullYear(), a.getUTCMonth(), a.getUTCDate());
  const startIn = (year: number, month: number) => {
    const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    return Date.UTC(year, month, Math.min(day, last)) + timeOfDay;
  };
  const n = new Date(now);
  let year = n.getUTCFullYear();
  let month = n.getUTCMonth();
  let start = startIn(year, month);
  if (start > now) {
    month -= 1;
    if (month < 0) {
      month = 11;
      year -= 1;
    }
    start = startIn(year, month);
  }
  const end = month === 11 ? startIn(year + 1, 0) : startIn(year, month + 1);
  return { id: String(start), start, end };
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

function ymd(d: Date): string {
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`;
}

/**
 * A duration as OpenAI writes it in x-ratelimit-reset-*: `120ms`, `17s`, `1m5s`, `3h59m0s`
 * (whole seconds once past one second, rounded up).
 */
export function formatResetDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  let s = Math.ceil(ms / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

/** Retry-After: whole seconds until the limit frees, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
