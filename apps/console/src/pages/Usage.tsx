import type { AdminUsageReport } from '@infer/contracts';
import { useState } from 'react';
import { api, query } from '../api.js';
import { toCsv } from '../format.js';
import { useLoad } from '../hooks.js';
import { navigate } from '../router.js';
import { BarChart, Button, ErrorNote, Field } from '../ui.js';

const day = (d: Date) => d.toISOString().slice(0, 10);

/** Usage explorer: ledger totals by member, key and/or model for a range; chart, table, CSV. */
export function UsagePage(props: { params: URLSearchParams }) {
  const now = new Date();
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const from = props.params.get('from') ?? day(monthStart);
  const to =
    props.params.get('to') ??
    day(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)));
  const by = props.params.get('by') ?? 'model';
  const member = props.params.get('member') ?? '';
  const [form, setForm] = useState({ from, to, by, member });
  const report = useLoad(
    () =>
      api<AdminUsageReport>(
        'GET',
        `/admin/usage${query({ from: `${from}T00:00:00Z`, to: `${to}T00:00:00Z`, group_by: by, member })}`,
      ),
    `${from}|${to}|${by}|${member}`,
  );
  const rows = report.data?.rows ?? [];
  const label = (r: AdminUsageReport['rows'][number]) =>
    [r.member_id, r.key_id, r.model].filter(Boolean).join(' / ') || 'all';
  const download = () => {
    const csv = toCsv(
      ['member_id', 'key_id', 'model', 'requests', 'prompt_tokens', 'completion_tokens', 'total_tokens'],
      rows.map((r) => [
        r.member_id ?? null,
        r.key_id ?? null,
        r.model ?? null,
        r.requests,
        r.prompt_tokens,
        r.completion_tokens,
        r.total_tokens,
      ]),
    );
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
    a.download = `usage-${from}-${to}-${by.replace(/,/g, '+')}.csv`;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  return (
    <section>
      <h1>Usage</h1>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          navigate('usage', form);
        }}
      >
        <Field
          label="From (UTC day)"
          name="from"
          type="date"
          value={form.from}
          onChange={(v) => setForm({ ...form, from: v })}
        />
        <Field
          label="To (exclusive)"
          name="to"
          type="date"
          value={form.to}
          onChange={(v) => setForm({ ...form, to: v })}
        />
        <Field
          label="Group by"
          name="by"
          value={form.by}
          options={['model', 'member', 'key', 'member,model', 'key,model']}
          onChange={(v) => setForm({ ...form, by: v })}
        />
        <Field
          label="Member id (optional)"
          name="member"
          value={form.member}
          onChange={(v) => setForm({ ...form, member: v })}
        />
        <Button type="submit">Show</Button>
        <Button onClick={download} disabled={!rows.length} reason="Nothing to export.">
          Export CSV
        </Button>
      </form>
      <ErrorNote error={report.error} />
      {report.data ? (
        <p>
          {report.data.totals.requests.toLocaleString('en')} requests,{' '}
          {report.data.totals.total_tokens.toLocaleString('en')} tokens.
        </p>
      ) : null}
      <BarChart
        title="Tokens per group"
        unit="Tokens"
        bars={rows.slice(0, 30).map((r) => ({ label: label(r), value: r.total_tokens }))}
      />
      <table>
        <caption className="sr-only">Usage rows</caption>
        <thead>
          <tr>
            <th scope="col">Group</th>
            <th scope="col">Requests</th>
            <th scope="col">Prompt tokens</th>
            <th scope="col">Completion tokens</th>
            <th scope="col">Total tokens</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={label(r)}>
              <td className="mono">{label(r)}</td>
              <td>{r.requests}</td>
              <td>{r.prompt_tokens}</td>
              <td>{r.completion_tokens}</td>
              <td>{r.total_tokens}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
