import { api } from '../api.js';
import { ago } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { BarChart, Button, ErrorNote } from '../ui.js';

export interface QueueReport {
  name: string;
  counts: Record<string, number>;
  workers: number;
}

const STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'] as const;

/** Queue depths per BullMQ queue, polled every 10 s while the tab is visible. */
export function QueuesPage() {
  const queues = useLoad(() => api<{ data: QueueReport[] }>('GET', '/admin/queues'), 'queues', 10_000);
  const now = useNow();
  const data = queues.data?.data ?? [];
  return (
    <section>
      <div className="titlebar">
        <h1>Queues</h1>
        <span aria-live="polite">updated {ago(queues.at ?? null, now)}</span>
        <Button onClick={queues.reload}>Refresh</Button>
      </div>
      <ErrorNote error={queues.error} />
      <BarChart
        title="Jobs waiting or active per queue"
        unit="Jobs"
        bars={data.map((q) => ({ label: q.name, value: (q.counts.waiting ?? 0) + (q.counts.active ?? 0) }))}
      />
      <table>
        <caption className="sr-only">Queue counts</caption>
        <thead>
          <tr>
            <th scope="col">Queue</th>
            {STATES.map((s) => (
              <th scope="col" key={s}>
                {s}
              </th>
            ))}
            <th scope="col">Workers</th>
          </tr>
        </thead>
        <tbody>
          {data.map((q) => (
            <tr key={q.name}>
              <td className="mono">{q.name}</td>
              {STATES.map((s) => (
                <td key={s}>{q.counts[s] ?? 0}</td>
              ))}
              <td>
                {q.workers === 0 && (q.counts.waiting ?? 0) > 0 ? (
                  <span className="badge danger">no workers</span>
                ) : (
                  q.workers
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
