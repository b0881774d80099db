import type { HourlyUsage } from '@infer/contracts';
import { api } from '../api.js';
import { ago } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { BarChart, Button, ErrorNote } from '../ui.js';
import type { QueueReport } from './Queues.js';

/**
 * Platform traffic of the last 24 hours per model and per hour (from the hourly rollup) and the queue
 * depths; polled every 15 s while the tab is visible.
 */
export function OverviewPage() {
  const usage = useLoad(
    () => api<HourlyUsage>('GET', '/admin/usage/hourly?hours=24'),
    'overview-usage',
    15_000,
  );
  const queues = useLoad(
    () => api<{ data: QueueReport[] }>('GET', '/admin/queues'),
    'overview-queues',
    15_000,
  );
  const now = useNow();
  const rows = usage.data?.data ?? [];
  const perModel = new Map<string, { requests: number; tokens: number; errors: number; latency: number }>();
  const perHour = new Map<number, number>();
  for (const r of rows) {
    const m = perModel.get(r.model) ?? { requests: 0, tokens: 0, errors: 0, latency: 0 };
    m.requests += r.requests;
    m.tokens += r.total_tokens;
    m.errors += r.errors;
    m.latency += r.avg_latency_ms * r.requests;
    perModel.set(r.model, m);
    perHour.set(r.hour, (perHour.get(r.hour) ?? 0) + r.requests);
  }
  const total = [...perModel.values()].reduce(
    (a, m) => ({
      requests: a.requests + m.requests,
      errors: a.errors + m.errors,
      latency: a.latency + m.latency,
    }),
    { requests: 0, errors: 0, latency: 0 },
  );
  return (
    <section>
      <div className="titlebar">
        <h1>Overview</h1>
        <span aria-live="polite">updated {ago(usage.at ?? null, now)}</span>
        <Button
          onClick={() => {
            usage.reload();
            queues.reload();
          }}
        >
          Refresh
        </Button>
      </div>
      <ErrorNote error={usage.error ?? queues.error} />
      <div className="cards">
        <div className="card">
          <h2>Requests, 24 h</h2>
          <p className="big">{total.requests.toLocaleString('en')}</p>
        </div>
        <div className="card">
          <h2>Error rate</h2>
          <p className="big">
            {total.requests ? `${((100 * total.errors) / total.requests).toFixed(1)} %` : '-'}
          </p>
        </div>
        <div className="card">
          <h2>Mean latency</h2>
          <p className="big">{total.requests ? `${Math.round(total.latency / total.requests)} ms` : '-'}</p>
        </div>
        <div className="card">
          <h2>Jobs waiting</h2>
          <p className="big">{(queues.data?.data ?? []).reduce((n, q) => n + (q.counts.waiting ?? 0), 0)}</p>
        </div>
      </div>
      <BarChart
        title="Requests per model, last 24 hours"
        unit="Requests"
        bars={[...perModel].map(([model, m]) => ({ label: model, value: m.requests }))}
      />
      <BarChart
        title="Tokens per model, last 24 hours"
        unit="Tokens"
        bars={[...perModel].map(([model, m]) => ({ label: model, value: m.tokens }))}
      />
      <BarChart
        title="Requests per hour (UTC)"
        unit="Requests"
        bars={[...perHour].map(([hour, n]) => ({
          label: `${new Date(hour * 1000).toISOString().slice(11, 13)}:00`,
          value: n,
        }))}
      />
    </section>
  );
}
