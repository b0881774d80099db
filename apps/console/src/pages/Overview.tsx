import type { AdminUsageReport } from '@infer/contracts';
import { api, query } from '../api.js';
import { ago } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { BarChart, Button, ErrorNote } from '../ui.js';
import type { QueueReport } from './Queues.js';

/** Today's traffic per model from the ledger and the queue depths; polled every 15 s while visible. */
export function OverviewPage() {
  const today = new Date();
  const from = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate()));
  const usage = useLoad(
    () =>
      api<AdminUsageReport>(
        'GET',
        `/admin/usage${query({ from: from.toISOString(), to: new Date(+from + 86_400_000).toISOString(), group_by: 'model' })}`,
      ),
    'overview-usage',
    15_000,
  );
  const queues = useLoad(
    () => api<{ data: QueueReport[] }>('GET', '/admin/queues'),
    'overview-queues',
    15_000,
  );
  const now = useNow();
  const rows = usage.data?.rows ?? [];
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
          <h2>Requests today</h2>
          <p className="big">{(usage.data?.totals.requests ?? 0).toLocaleString('en')}</p>
        </div>
        <div className="card">
          <h2>Tokens today</h2>
          <p className="big">{(usage.data?.totals.total_tokens ?? 0).toLocaleString('en')}</p>
        </div>
        <div className="card">
          <h2>Jobs waiting</h2>
          <p className="big">{(queues.data?.data ?? []).reduce((n, q) => n + (q.counts.waiting ?? 0), 0)}</p>
        </div>
      </div>
      <BarChart
        title="Requests per model today (UTC)"
        unit="Requests"
        bars={rows.map((r) => ({ label: r.model ?? '-', value: r.requests }))}
      />
      <BarChart
        title="Tokens per model today (UTC)"
        unit="Tokens"
        bars={rows.map((r) => ({ label: r.model ?? '-', value: r.total_tokens }))}
      />
    </section>
  );
}
