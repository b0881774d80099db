import type { AuditList } from '@infer/contracts';
import { useState } from 'react';
import { api, query } from '../api.js';
import { utc } from '../format.js';
import { useLoad } from '../hooks.js';
import { navigate } from '../router.js';
import { Button, ErrorNote, Field } from '../ui.js';

/** Only the fields that changed, `field: before → after`. */
function diff(before: unknown, after: unknown): string {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  const parts = keys
    .filter((k) => JSON.stringify(b[k]) !== JSON.stringify(a[k]))
    .map((k) => `${k}: ${k in b ? JSON.stringify(b[k]) : '∅'} → ${k in a ? JSON.stringify(a[k]) : '∅'}`);
  return parts.join('; ') || '-';
}

export function AuditPage(props: { params: URLSearchParams }) {
  const action = props.params.get('action') ?? '';
  const target = props.params.get('target_id') ?? '';
  const before = props.params.get('before') ?? '';
  const [form, setForm] = useState({ action, target_id: target });
  const list = useLoad(
    () => api<AuditList>('GET', `/admin/audit${query({ action, target_id: target, before, limit: 50 })}`),
    `${action}|${target}|${before}`,
  );
  return (
    <section>
      <h1>Audit log</h1>
      <p>
        Every change made through the admin API, the console or the CLI. Nobody can edit or delete an entry.
      </p>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          navigate('audit', form);
        }}
      >
        <Field
          label="Action (e.g. key.revoke, or member. for all)"
          name="action"
          value={form.action}
          onChange={(v) => setForm({ ...form, action: v })}
        />
        <Field
          label="Target id"
          name="target_id"
          value={form.target_id}
          onChange={(v) => setForm({ ...form, target_id: v })}
        />
        <Button type="submit">Filter</Button>
      </form>
      <ErrorNote error={list.error} />
      <table className="cards">
        <caption className="sr-only">Audit entries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Change</th>
            <th scope="col" className="wide">
              IP
            </th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((e) => (
            <tr key={e.id}>
              <td className="nowrap" data-label="Time">
                {utc(e.at)}
              </td>
              <td data-label="Actor">{e.actor.label}</td>
              <td className="mono" data-label="Action">
                {e.action}
              </td>
              <td data-label="Target">
                <span>
                  {e.target.type} <span className="mono">{e.target.id ?? ''}</span>
                </span>
              </td>
              <td data-label="Change">{diff(e.before, e.after)}</td>
              <td className="wide" data-label="IP">
                {e.ip ?? '-'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="pager">
        <Button disabled={!before} onClick={() => navigate('audit', { action, target_id: target })}>
          Newest
        </Button>
        <Button
          disabled={!list.data?.next_before}
          onClick={() =>
            navigate('audit', { action, target_id: target, before: list.data?.next_before ?? undefined })
          }
        >
          Older
        </Button>
      </div>
    </section>
  );
}
