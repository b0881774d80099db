import type { AlertView } from './alert-eval.js';

/** The fields of Alertmanager's GET /api/v2/alerts (gettableAlerts) the console reads. */
interface GettableAlert {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt?: string;
  status?: { state?: string };
}

const TIMEOUT_MS = 2_000;
const CACHE_MS = 10_000;

/**
 * The firing alerts of an Alertmanager (ALERTMANAGER_URL): GET /api/v2/alerts of the active ones,
 * neither silenced nor inhibited, read at most every 10 s.
 */
export class AlertmanagerReader {
  private cached: { at: number; value: Promise<AlertView[]> } | null = null;

  constructor(
    private readonly baseUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  read(): Promise<AlertView[]> {
    const now = this.now();
    if (this.cached && now - this.cached.at < CACHE_MS) return this.cached.value;
    const value = this.fetch();
    this.cached = { at: now, value };
    value.catch(() => {
      // A failure is not kept for 10 s: the next overview asks again.
      if (this.cached?.value === value) this.cached = null;
    });
    return value;
  }

  private async fetch(): Promise<AlertView[]> {
    const url = new URL('api/v2/alerts', this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    url.searchParams.set('active', 'true');
    url.searchParams.set('silenced', 'false');
    url.searchParams.set('inhibited', 'false');
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (!res.ok) throw new Error(`Alertmanager answered ${res.status}`);
    const body = (await res.json()) as unknown;
    if (!Array.isArray(body)) throw new Error('Alertmanager answered something other than a list of alerts');
    return alertsOf(body as GettableAlert[]);
  }
}

/** Alertmanager's alerts as the console shows them (firing, newest last). */
export function alertsOf(list: GettableAlert[]): AlertView[] {
  const out: AlertView[] = [];
  for (const a of list) {
    if (a.status?.state && a.status.state !== 'active') continue;
    const labels = { ...(a.labels ?? {}) };
    const alert = labels.alertname ?? 'unnamed';
    delete labels.alertname;
    const severity = labels.severity === 'critical' ? 'critical' : 'warning';
    delete labels.severity;
    const since = Date.parse(a.startsAt ?? '');
    out.push({
      alert,
      severity,
      state: 'firing',
      labels,
      since: Number.isFinite(since) ? since : 0,
      value: null,
      summary: a.annotations?.summary ?? a.annotations?.description ?? '',
    });
  }
  return out.sort(
    (a, b) => (a.severity === b.severity ? 0 : a.severity === 'critical' ? -1 : 1) || a.since - b.since,
  );
}
