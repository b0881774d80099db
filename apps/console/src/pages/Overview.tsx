import { alertThreshold, type HourlyUsage, type Overview } from '@infer/contracts';
import { useEffect, useState } from 'react';
import { api } from '../api.js';
import { ago, compactNumber } from '../format.js';
import { HealthPanel, InstancesTable } from '../health.js';
import { useLoad, useNow } from '../hooks.js';
import { requestsPerModel24h } from '../hours.js';
import { BarChart, Button, ErrorNote, LineChart } from '../ui.js';

const MINUTES = 60;
/** The shipped alert InferHighErrorRate (k8s/components/monitoring/alerts.yaml): 5xx over 5 % of answers. */
const SERVER_ERROR_ALERT = alertThreshold('InferHighErrorRate');
/** InferLedgerLag: more than 10,000 usage events not yet written. */
const LEDGER_LAG_ALERT = alertThreshold('InferLedgerLag');
const pct = (r: number | null | undefined) => (r == null ? '-' : `${(100 * r).toFixed(1)} %`);
const POLL_MS = 5_000;

export interface LiveOverview {
  data: Overview | undefined;
  error: unknown;
  /** `live`: Server-Sent Events; `polling`: the stream failed, GET every 5 s. */
  mode: 'connecting' | 'live' | 'polling';
  at: number | undefined;
}

/**
 * The overview, live: an EventSource on /admin/overview/stream (same origin, so `connect-src 'self'`
 * allows it and the session cookie goes along). A stream the server ends (renewal after 10 min) is
 * reopened; a stream that keeps failing gives way to polling GET /admin/overview.
 */
export function useLiveOverview(minutes: number): LiveOverview {
  const [state, setState] = useState<LiveOverview>({
    data: undefined,
    error: null,
    mode: 'connecting',
    at: undefined,
  });
  const [generation, setGeneration] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: generation reopens the stream
  useEffect(() => {
    let closed = false;
    let poll: ReturnType<typeof setInterval> | undefined;
    let es: EventSource | undefined;
    let failures = 0;
    const take = (data: Overview, mode: LiveOverview['mode']) =>
      !closed && setState({ data, error: null, mode, at: Date.now() });
    const startPolling = () => {
      const load = () =>
        api<Overview>('GET', `/admin/overview?minutes=${minutes}`).then(
          (d) => take(d, 'polling'),
          (error: unknown) => !closed && setState((s) => ({ ...s, error, mode: 'polling' })),
        );
      void load();
      poll = setInterval(() => {
        if (document.visibilityState === 'visible') void load();
      }, POLL_MS);
    };
    // A hidden tab holds no stream (the polled pages, too, poll only while visible), so the session
    // can end on its idle timeout; visible again, a new stream opens.
    const onVisibility = () => {
      if (document.visibilityState === 'visible') setGeneration((g) => g + 1);
      else es?.close();
    };
    document.addEventListener('visibilitychange', onVisibility);
    const cleanup = () => {
      closed = true;
      document.removeEventListener('visibilitychange', onVisibility);
      es?.close();
      clearInterval(poll);
    };
    if (typeof EventSource === 'undefined') {
      startPolling();
      return cleanup;
    }
    if (document.visibilityState !== 'visible') return cleanup;
    const source = new EventSource(`/admin/overview/stream?minutes=${minutes}`);
    es = source;
    source.addEventListener('overview', (e) => {
      failures = 0;
      take(JSON.parse((e as MessageEvent<string>).data) as Overview, 'live');
    });
    source.addEventListener('end', (e) => {
      source.close();
      const { code } = JSON.parse((e as MessageEvent<string>).data) as { code: string };
      if (code === 'renew' || code === 'shutdown') setGeneration((g) => g + 1);
      // A session that ended: one plain request makes the console show the sign-in page.
      else void api('GET', '/admin/overview?minutes=5').catch(() => undefined);
    });
    source.onerror = () => {
      failures++;
      if (failures >= 3 && !poll) {
        source.close();
        startPolling();
      }
    };
    return cleanup;
  }, [minutes, generation]);
  return state;
}

const hhmm = (unix: number) => new Date(unix * 1000).toISOString().slice(11, 16);
const ms = (v: number | null) => (v === null ? '-' : v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${v} ms`);

/**
 * Live platform overview: first whether the platform is healthy (backing servers, every instance's
 * state, firing alerts), then requests/s, error rate, requests in flight, ledger lag, jobs waiting;
 * per model p50/p99 latency and tokens per minute over the last hour (charts and a table); the
 * service instances that are up, with version and load; queue depths. Below, 24 hours from the
 * hourly rollup.
 */
export function OverviewPage() {
  const live = useLiveOverview(MINUTES);
  const usage = useLoad(
    () => api<HourlyUsage>('GET', '/admin/usage/hourly?hours=24'),
    'overview-usage',
    60_000,
  );
  const now = useNow();
  const o = live.data;
  const starts = o?.minute_starts ?? [];
  const xLabels: [string, string] = starts.length
    ? [hhmm(starts[0] as number), hhmm(starts.at(-1) as number)]
    : ['', ''];
  const top = (o?.models ?? []).slice(0, 6);
  const minuteLabel = (i: number) => {
    const t = starts[i];
    return t === undefined ? '' : `${hhmm(t)} UTC`;
  };
  // The rollup for the hours before this one, the live counters for this one (hours.ts).
  const day = requestsPerModel24h(usage.data?.data ?? [], o, now);
  const waiting = (o?.queues ?? []).reduce((n, q) => n + (q.counts.waiting ?? 0), 0);
  // Per service: how many instances are up, degraded, down (`chat-service: 2 up, 1 degraded`).
  const services = new Map<string, Record<'up' | 'degraded' | 'down', number>>();
  for (const i of o?.instances ?? []) {
    const n = services.get(i.service) ?? { up: 0, degraded: 0, down: 0 };
    n[i.state]++;
    services.set(i.service, n);
  }
  const counts = (n: Record<'up' | 'degraded' | 'down', number>) =>
    (['up', 'degraded', 'down'] as const)
      .filter((k) => n[k] || k === 'up')
      .map((k) => `${n[k]} ${k}`)
      .join(', ');
  return (
    <section>
      <div className="titlebar">
        <h1>Overview</h1>
        <span aria-live="polite">
          {live.mode === 'live' ? 'live' : live.mode === 'polling' ? 'polling every 5 s' : 'connecting'},
          updated {ago(live.at ?? null, now)}
        </span>
        <Button onClick={usage.reload}>Refresh 24 h</Button>
      </div>
      <ErrorNote error={live.error ?? usage.error} />
      <HealthPanel o={o} now={now} />
      <h2>Service instances</h2>
      <p>
        {services.size
          ? [...services].map(([s, n], i) => (
              <span key={s}>
                {i ? ' · ' : ''}
                <span className="nowrap">
                  {s}: {counts(n)}
                </span>
              </span>
            ))
          : o
            ? 'No instance has reported.'
            : ''}
      </p>
      <InstancesTable o={o} now={now} />
      <h2>Traffic, last hour</h2>
      <div className="cards">
        <div className="card">
          <h2>Requests/s</h2>
          <p className="big" data-testid="rps">
            {o ? o.totals.requests_per_s : '-'}
          </p>
        </div>
        <div className="card" data-testid="server-errors">
          <h2>Server errors (5xx), 1 h</h2>
          <p className="big">
            {pct(o?.totals.server_error_rate)}{' '}
            {o && (o.totals.server_error_rate ?? 0) > SERVER_ERROR_ALERT ? (
              <span className="badge danger">over the alert's 5 %</span>
            ) : null}
          </p>
          <p>the platform failed; the alert fires above {pct(SERVER_ERROR_ALERT)}</p>
        </div>
        <div className="card" data-testid="refusals">
          <h2>Refusals (429, 402), 1 h</h2>
          <p className="big">{pct(o?.totals.refusal_rate)}</p>
          <p>limits and allowances at work</p>
        </div>
        <div className="card" data-testid="client-errors">
          <h2>Client errors (4xx), 1 h</h2>
          <p className="big">{pct(o?.totals.client_error_rate)}</p>
          <p>requests the clients got wrong</p>
        </div>
        <div className="card">
          <h2>In flight</h2>
          <p className="big" data-testid="inflight">
            {o ? o.inflight : '-'}
          </p>
        </div>
        <div className="card">
          <h2>Jobs waiting</h2>
          <p className="big">{o ? waiting : '-'}</p>
        </div>
        <div className="card">
          <h2>Ledger lag</h2>
          <p className="big" data-testid="ledger-lag">
            {!o
              ? '-'
              : o.ledger.error
                ? 'unknown'
                : messages((o.ledger.pending ?? 0) + (o.ledger.ack_pending ?? 0))}
          </p>
          <p>a message: one usage event, or a gateway's batch of them</p>
          {o?.ledger.oldest_ms ? <p>oldest {ms(o.ledger.oldest_ms)}</p> : null}
          <p>the alert fires above {LEDGER_LAG_ALERT.toLocaleString('en')} waiting</p>
          {o?.ledger.error ? <p>{o.ledger.error}</p> : null}
        </div>
      </div>
      <div className="charts">
        <LineChart
          title="Requests per minute, last hour"
          unit="requests"
          xLabels={xLabels}
          xLabel={minuteLabel}
          series={
            o
              ? [
                  { label: 'requests', values: o.totals.requests_per_min },
                  { label: 'server errors', values: o.totals.server_errors_per_min },
                  { label: 'refusals', values: o.totals.refusals_per_min },
                  { label: 'client errors', values: o.totals.client_errors_per_min },
                ]
              : []
          }
        />
        <LineChart
          title="Server errors, % of requests per minute"
          unit="%"
          xLabels={xLabels}
          xLabel={minuteLabel}
          threshold={{ value: 100 * SERVER_ERROR_ALERT, label: 'alert threshold (InferHighErrorRate)' }}
          series={
            o
              ? [
                  {
                    label: '5xx %',
                    values: o.totals.requests_per_min.map((r, i) =>
                      r ? Math.round((1000 * (o.totals.server_errors_per_min[i] ?? 0)) / r) / 10 : null,
                    ),
                  },
                ]
              : []
          }
        />
        <LineChart
          title="Tokens per minute per model, last hour"
          unit="tokens"
          xLabels={xLabels}
          xLabel={minuteLabel}
          series={top.map((m) => ({ label: m.model, values: m.tokens_per_min }))}
        />
        <LineChart
          title="p50 latency per model (ms), last hour"
          unit="ms"
          xLabels={xLabels}
          xLabel={minuteLabel}
          series={top.map((m) => ({ label: m.model, values: m.p50_per_min }))}
        />
        <LineChart
          title="p99 latency per model (ms), last hour"
          unit="ms"
          xLabels={xLabels}
          xLabel={minuteLabel}
          series={top.map((m) => ({ label: m.model, values: m.p99_per_min }))}
        />
      </div>
      <h2>Models, last hour</h2>
      <table className="cards">
        <caption className="sr-only">Traffic per model over the last hour</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Requests</th>
            <th scope="col">Errors</th>
            <th scope="col">p50</th>
            <th scope="col">p99</th>
            <th scope="col">Tokens/min (mean)</th>
          </tr>
        </thead>
        <tbody>
          {(o?.models ?? []).map((m) => (
            <tr key={m.model}>
              <td className="mono" data-label="Model">
                {m.model}
              </td>
              <td data-label="Requests">{m.requests.toLocaleString('en')}</td>
              <td data-label="Errors">{m.errors.toLocaleString('en')}</td>
              <td data-label="p50">{ms(m.p50_ms)}</td>
              <td data-label="p99">{ms(m.p99_ms)}</td>
              <td data-label="Tokens/min">
                {compactNumber(Math.round(m.tokens / Math.max(1, o?.minutes ?? 60)))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {o && o.models.length === 0 ? <p>No model traffic in the last hour.</p> : null}

      <h2>Queues</h2>
      <table className="cards">
        <caption className="sr-only">Queue depths</caption>
        <thead>
          <tr>
            <th scope="col">Queue</th>
            <th scope="col">waiting</th>
            <th scope="col">active</th>
            <th scope="col">delayed</th>
            <th scope="col">failed</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {(o?.queues ?? []).map((q) => (
            <tr key={q.name}>
              <td className="mono" data-label="Queue">
                {q.name}
              </td>
              <td data-label="waiting">{q.counts.waiting ?? 0}</td>
              <td data-label="active">{q.counts.active ?? 0}</td>
              <td data-label="delayed">{q.counts.delayed ?? 0}</td>
              <td data-label="failed">{q.counts.failed ?? 0}</td>
              <td data-label="State">
                {q.paused ? <span className="badge danger">paused</span> : 'running'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>

      <BarChart
        title="Requests per model, last 24 hours"
        unit="Requests"
        bars={day.models.map((m) => ({ label: m.model, value: m.requests, partial: m.current }))}
        partialLabel={`the current hour so far (since ${hhmm(day.hourStart)} UTC)`}
      />
    </section>
  );
}

const messages = (n: number) => `${n} message${n === 1 ? '' : 's'}`;
