import type { DailyUsage, DailyUsageRow } from '@infer/contracts';
import { useState } from 'react';
import { api, query } from '../api.js';
import { toCsv } from '../format.js';
import { useLoad } from '../hooks.js';
import { navigate } from '../router.js';
import { BarChart, Button, ErrorNote, Field } from '../ui.js';

const day = (d: Date) => d.toISOString().slice(0, 10);
const GROUPS = ['model', 'member', 'key', 'none'] as const;

/** Usage explorer: daily rollups by model, member or key for a range (filters in the URL); chart, table, CSV. */
export function UsagePage(props: { params: URLSearchParams }) {
  const today = new Date();
  const to = props.params.get('to') ?? day(today);
  const from = props.params.get('from') ?? day(new Date(+today - 29 * 86_400_000));
  const by = props.params.get('by') ?? 'model';
  const member = props.params.get('member') ?? '';
  const key = props.params.get('key') ?? '';
  const model = props.params.get('model') ?? '';
  const [form, setForm] = useState({ from, to, by, member, key, model });
  const report = useLoad(
    () =>
      api<DailyUsage>('GET', `/admin/usage/daily${query({ from, to, group_by: by, member, key, model })}`),
    `${from}|${to}|${by}|${member}|${key}|${model}`,
  );
  const rows = report.data?.data ?? [];
  const group = (r: DailyUsageRow) => r.model ?? r.member_id ?? r.key_id ?? 'all';
  // Names beside the ids (a deleted member or key keeps its id only).
  const named = (r: DailyUsageRow) =>
    r.member_name
      ? `${r.member_name} (${r.member_id})`
      : r.key_name
        ? `${r.key_name} ${r.key_prefix ?? ''} (${r.key_id})`
        : group(r);
  const perDay = new Map<string, number>();
  const perGroup = new Map<string, number>();
  let requests = 0;
  let tokens = 0;
  // Exact: costs are decimal strings of dollars, summed as integer nano-dollars (ADR 0101).
  let nanos = 0n;
  for (const r of rows) {
    perDay.set(r.day, (perDay.get(r.day) ?? 0) + r.total_tokens);
    perGroup.set(group(r), (perGroup.get(group(r)) ?? 0) + r.total_tokens);
    requests += r.requests;
    tokens += r.total_tokens;
    nanos += toNanos(r.cost);
  }
  const download = () => {
    const csv = toCsv(
      [
        'day',
        by === 'none' ? 'group' : by,
        'requests',
        'errors',
        'prompt_tokens',
        'completion_tokens',
        'total_tokens',
        'cost_usd',
        ...(by === 'member' || by === 'key' ? ['name'] : []),
      ],
      rows.map((r) => [
        r.day,
        group(r),
        r.requests,
        r.errors,
        r.prompt_tokens,
        r.completion_tokens,
        r.total_tokens,
        r.cost,
        ...(by === 'member' ? [r.member_name ?? ''] : by === 'key' ? [r.key_name ?? ''] : []),
      ]),
    );
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
    a.download = `usage-${from}-${to}-by-${by}.csv`;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  const set = (k: keyof typeof form) => (v: string) => setForm({ ...form, [k]: v });
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
        <Field label="From (UTC day)" name="from" type="date" value={form.from} onChange={set('from')} />
        <Field label="To (UTC day, inclusive)" name="to" type="date" value={form.to} onChange={set('to')} />
        <Field label="Group by" name="by" value={form.by} options={GROUPS} onChange={set('by')} />
        <Field label="Member id" name="member" value={form.member} onChange={set('member')} />
        <Field label="Key id" name="key" value={form.key} onChange={set('key')} />
        <Field label="Model" name="model" value={form.model} onChange={set('model')} />
        <Button type="submit">Show</Button>
        <Button onClick={download} disabled={!rows.length} reason="Nothing to export.">
          Export CSV
        </Button>
      </form>
      <ErrorNote error={report.error} />
      <p>
        {requests.toLocaleString('en')} requests, {tokens.toLocaleString('en')} tokens, ${fromNanos(nanos)}{' '}
        from {from} to {to}.
      </p>
      <BarChart
        title="Tokens per day (UTC)"
        unit="Tokens"
        bars={[...perDay].map(([label, value]) => ({ label, value }))}
      />
      <BarChart
        title={`Tokens per ${by === 'none' ? 'range' : by}`}
        unit="Tokens"
        bars={[...perGroup]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 30)
          .map(([label, value]) => ({ label, value }))}
      />
      <table>
        <caption className="sr-only">Usage per day</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">{by === 'none' ? 'Group' : by}</th>
            <th scope="col">Requests</th>
            <th scope="col" className="wide">
              Errors
            </th>
            <th scope="col">Total tokens</th>
            <th scope="col">Cost (USD)</th>
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, 500).map((r) => (
            <tr key={`${r.day}|${group(r)}`}>
              <td>{r.day}</td>
              <td className="mono">{named(r)}</td>
              <td>{r.requests}</td>
              <td className="wide">{r.errors}</td>
              <td>{r.total_tokens}</td>
              <td>{r.cost}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length > 500 ? <p>The first 500 of {rows.length} rows are shown; the CSV has them all.</p> : null}
    </section>
  );
}

/** "12.5" dollars -> nano-dollars (a bigint: sums without drift). */
function toNanos(cost: string | undefined): bigint {
  const m = /^(\d+)(?:\.(\d{1,9}))?$/.exec(cost ?? '0');
  if (!m) return 0n;
  return BigInt(m[1]!) * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
}

/** Nano-dollars -> dollars with at most 9 decimals. */
function fromNanos(n: bigint): string {
  const frac = (n % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${n / 1_000_000_000n}${frac ? `.${frac}` : ''}`;
}
