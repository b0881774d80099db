import type { AdminAlert, AdminAlertList } from '@infer/contracts';
import { useState } from 'react';
import { api, query } from '../api.js';
import { useLoad } from '../hooks.js';
import { limitTitle } from '../limits-explain.js';
import { Link, navigate } from '../router.js';
import { Button, ErrorNote, Field, Time } from '../ui.js';

const STATUSES = ['', 'pending', 'delivered', 'failed', 'unsent'] as const;
const BADGE: Record<string, string> = {
  delivered: 'badge ok',
  failed: 'badge danger',
  pending: 'badge warn',
  unsent: 'badge',
};
const STATUS_TEXT: Record<string, string> = {
  delivered: 'delivered',
  failed: 'gave up',
  pending: 'retrying',
  unsent: 'no webhook',
};

/** `member.budget_per_month` -> "Monthly budget of the member"; the rest as the limits explain them. */
function alertTitle(limit: string): string {
  if (limit === 'member.budget_per_month') return 'Monthly budget of the member';
  if (limit === 'key.budget_per_month') return 'Monthly budget of the key';
  return limitTitle(limit);
}

function amount(a: AdminAlert, v: string | number): string {
  return a.unit === 'usd' ? `$${v}` : `${Number(v).toLocaleString('en')} tokens`;
}

/**
 * Budget and token-allowance alerts that fired (GET /admin/alerts), newest first: whose counter, which
 * limit, the threshold, the period, and the webhook delivery of each with its log (every attempt's
 * status and error, the next retry). Refreshed every 15 s.
 */
export function AlertsPage(props: { params: URLSearchParams }) {
  const status = props.params.get('status') ?? '';
  const member = props.params.get('member') ?? '';
  const [memberField, setMemberField] = useState(member);
  const list = useLoad(
    () => api<AdminAlertList>('GET', `/admin/alerts${query({ status, member, limit: 100 })}`),
    `${status}|${member}`,
    15_000,
  );
  const go = (p: Record<string, string | undefined>) => navigate('alerts', { status, member, ...p });
  const rows = list.data?.data ?? [];
  return (
    <section>
      <div className="titlebar">
        <h1>Alerts</h1>
      </div>
      <p className="muted">
        An alert fires once per threshold and period when a budget or a token allowance passes it, and is
        delivered to the webhook (ALERT_WEBHOOK_URL) signed, with retries.
      </p>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go({ member: memberField.trim() || undefined });
        }}
      >
        <Field
          label="Delivery"
          name="status"
          value={status}
          options={STATUSES}
          onChange={(v) => go({ status: v || undefined })}
        />
        <Field label="Member id" name="member" value={memberField} onChange={setMemberField} />
        <Button type="submit">Filter</Button>
      </form>
      <ErrorNote error={list.error} />
      <table className="cards">
        <caption className="sr-only">Alerts, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Fired</th>
            <th scope="col">Member / key</th>
            <th scope="col">Limit</th>
            <th scope="col">Threshold</th>
            <th scope="col">Period</th>
            <th scope="col">Delivery</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((a) => (
            <tr key={a.id} data-alert={a.id}>
              <td data-label="Fired">
                <Time t={a.created_at} />
              </td>
              <td data-label="Member / key">
                <span>
                  <Link to={`members/${encodeURIComponent(a.member_id)}`}>
                    {a.member_name ?? a.member_id}
                  </Link>
                  {a.key_id ? (
                    <>
                      <br />
                      key <span className="mono">{a.key_prefix ?? a.key_id}</span>
                      {a.key_name ? ` (${a.key_name})` : ''}
                    </>
                  ) : null}
                </span>
              </td>
              <td data-label="Limit">
                <span>
                  {alertTitle(a.limit)}
                  <br />
                  <small className="mono muted">{a.limit}</small>
                </span>
              </td>
              <td data-label="Threshold">
                <span>
                  <strong>{a.threshold_percent} %</strong>: {amount(a, a.used)} of {amount(a, a.limit_value)}
                </span>
              </td>
              <td data-label="Period">
                <span>
                  <Time t={a.period.start} /> to <Time t={a.period.end} />
                </span>
              </td>
              <td data-label="Delivery">
                <Delivery a={a} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && rows.length === 0 ? (
        <p>No alert has fired{status || member ? ' that matches' : ''}.</p>
      ) : null}
    </section>
  );
}

function Delivery(props: { a: AdminAlert }) {
  const a = props.a;
  return (
    <span>
      <span className={BADGE[a.status] ?? 'badge'}>{STATUS_TEXT[a.status] ?? a.status}</span> {a.attempts}{' '}
      {a.attempts === 1 ? 'attempt' : 'attempts'}
      {a.delivered_at ? (
        <>
          , delivered <Time t={a.delivered_at} />
        </>
      ) : null}
      {a.next_retry_at ? (
        <>
          , next retry <Time t={a.next_retry_at} />
        </>
      ) : null}
      {a.last_error ? (
        <>
          <br />
          <small className="error">Last error: {a.last_error}</small>
        </>
      ) : null}
      {a.deliveries.length ? (
        <details>
          <summary>Delivery log ({a.deliveries.length})</summary>
          <ol className="plain-list">
            {a.deliveries.map((d) => (
              <li key={d.attempt}>
                #{d.attempt} <Time t={d.at} />: {d.status === null ? 'no answer' : `HTTP ${d.status}`}
                {d.error && d.error !== `HTTP ${d.status}` ? ` (${d.error})` : ''}, {d.duration_ms} ms
              </li>
            ))}
          </ol>
        </details>
      ) : null}
    </span>
  );
}
