import type { KeyLimitsState, RequestLogDetail, RequestLogEntry, RequestLogList } from '@infer/contracts';
import { useEffect, useRef, useState } from 'react';
import { ApiFailure, api, query } from '../api.js';
import { ago, utc } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { limitTitle, resetSentence, stateSentence, statusText } from '../limits-explain.js';
import { Link, navigate } from '../router.js';
import { Button, ErrorNote, Field } from '../ui.js';

/** The filters of the list, as they are named in the URL and in GET /admin/logs. */
const FILTERS = ['member', 'key', 'model', 'status', 'code', 'from', 'to', 'trace_id'] as const;
/** A W3C trace id (what trace viewers show): the lookup takes it as well as a request id. */
const TRACE_ID = /^[0-9a-f]{32}$/i;
type Filters = Record<(typeof FILTERS)[number], string>;
const STATUS_OPTIONS = ['', '2xx', '4xx', '429', '402', '5xx'] as const;
const PAGE = 50;
/** The live tail: a new look every 2 s, at most 200 rows kept, and it stops by itself after 10 min. */
const TAIL_MS = 2000;
const TAIL_ROWS = 200;
const TAIL_FOR_MS = 10 * 60_000;

/** `2026-11-29T08:00` (a datetime-local field, read as UTC) <-> ISO. */
const toIso = (v: string) => (v ? `${v}:00.000Z` : '');
const fromIso = (v: string) => (v ? v.slice(0, 16) : '');

function badge(status: number): string {
  if (status >= 500) return 'badge danger';
  if (status === 429 || status === 402) return 'badge warn';
  if (status >= 400) return 'badge';
  return 'badge ok';
}

/**
 * The request log: a lookup by request id (what a user quotes from an error or `x-request-id`), the
 * list with filters (member, key, model, status class, error code, time range; all in the URL), and
 * a bounded live tail that pauses while the tab is hidden.
 */
export function LogsPage(props: { params: URLSearchParams }) {
  const p = props.params;
  const filters = Object.fromEntries(FILTERS.map((f) => [f, p.get(f) ?? ''])) as Filters;
  const before = p.get('before') ?? '';
  const requestId = p.get('request') ?? '';
  const [form, setForm] = useState<Filters>({
    ...filters,
    from: fromIso(filters.from),
    to: fromIso(filters.to),
  });
  const [lookup, setLookup] = useState(requestId);
  const [tail, setTail] = useState(false);
  const filterKey = FILTERS.map((f) => filters[f]).join('|');
  const list = useLoad(
    () => api<RequestLogList>('GET', `/admin/logs${query({ ...filters, before, limit: PAGE })}`),
    `${filterKey}|${before}`,
  );
  const go = (over: Record<string, string | undefined>) =>
    navigate('logs', { ...filters, request: requestId || undefined, ...over });

  return (
    <section>
      <h1>Logs</h1>
      <p>
        Every request the gateway answered, refusals included, newest first. Users find their request id in an
        error body or the <span className="mono nowrap">x-request-id</span> header.
      </p>
      <form
        className="filters lookup"
        aria-label="Find a request by its id"
        onSubmit={(e) => {
          e.preventDefault();
          const id = lookup.trim();
          if (TRACE_ID.test(id)) {
            setLookup('');
            navigate('logs', { trace_id: id.toLowerCase() });
          } else go({ request: id || undefined });
        }}
      >
        <Field
          label="Request id or trace id"
          name="request"
          value={lookup}
          onChange={setLookup}
          type="search"
        />
        <Button type="submit" kind="primary">
          Look up
        </Button>
      </form>
      {requestId ? <RequestDetail requestId={requestId} onClose={() => go({ request: undefined })} /> : null}

      <h2>Requests</h2>
      {filters.trace_id ? (
        <p data-testid="trace-filter">
          The requests of trace <span className="mono">{filters.trace_id}</span>.
        </p>
      ) : null}
      <form
        className="filters"
        aria-label="Filter the requests"
        onSubmit={(e) => {
          e.preventDefault();
          navigate('logs', { ...form, from: toIso(form.from), to: toIso(form.to) });
        }}
      >
        <Field
          label="Member id"
          name="member"
          value={form.member}
          onChange={(v) => setForm({ ...form, member: v })}
        />
        <Field label="Key id" name="key" value={form.key} onChange={(v) => setForm({ ...form, key: v })} />
        <Field
          label="Model"
          name="model"
          value={form.model}
          onChange={(v) => setForm({ ...form, model: v })}
        />
        <Field
          label="Status"
          name="status"
          value={form.status}
          options={STATUS_OPTIONS}
          onChange={(v) => setForm({ ...form, status: v })}
        />
        <Field
          label="Error code"
          name="code"
          value={form.code}
          onChange={(v) => setForm({ ...form, code: v })}
        />
        <Field
          label="From (UTC)"
          name="from"
          type="datetime-local"
          value={form.from}
          onChange={(v) => setForm({ ...form, from: v })}
        />
        <Field
          label="To (UTC)"
          name="to"
          type="datetime-local"
          value={form.to}
          onChange={(v) => setForm({ ...form, to: v })}
        />
        <Button type="submit">Filter</Button>
        <Button
          onClick={() => {
            setForm({ member: '', key: '', model: '', status: '', code: '', from: '', to: '', trace_id: '' });
            navigate('logs', {});
          }}
        >
          Clear
        </Button>
      </form>
      {tail ? (
        <LiveTail filters={filters} onStop={() => setTail(false)} />
      ) : (
        <>
          <div className="titlebar">
            <Button onClick={() => setTail(true)} label="Start the live tail">
              Live tail
            </Button>
            <Button onClick={list.reload}>Refresh</Button>
          </div>
          <ErrorNote error={list.error} />
          <LogTable rows={list.data?.data ?? []} filters={filters} />
          {list.data && list.data.data.length === 0 ? <p>No request matches.</p> : null}
          <div className="pager">
            <Button disabled={!before} onClick={() => go({ before: undefined })}>
              Newest
            </Button>
            <Button
              disabled={!list.data?.next_before}
              onClick={() => go({ before: list.data?.next_before ?? undefined })}
            >
              Older
            </Button>
          </div>
        </>
      )}
    </section>
  );
}

/** A URL of the Logs page with these filters and one request opened. */
function logsLink(filters: Partial<Filters>, request?: string): string {
  return `logs${query({ ...filters, request })}`;
}

/** The end of a long id (a UUIDv7's start is its creation time, alike for ids made together). */
const shortId = (id: string) => (id.length > 14 ? `…${id.slice(-10)}` : id);

function LogTable(props: { rows: RequestLogEntry[]; filters: Filters }) {
  return (
    <table className="cards">
      <caption className="sr-only">Requests, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Time (UTC)</th>
          <th scope="col">Status</th>
          <th scope="col">Member</th>
          <th scope="col">Model, endpoint</th>
          <th scope="col">Code / limit</th>
          <th scope="col">Latency</th>
          <th scope="col" className="wide">
            Tokens
          </th>
          <th scope="col">Request</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((r) => (
          <tr key={`${r.at}.${r.request_id}`}>
            <td className="nowrap" data-label="Time">
              {new Date(r.at).toISOString().slice(5, 19).replace('T', ' ')}
            </td>
            <td data-label="Status">
              <span className={badge(r.status)}>
                {r.status} {statusText(r.status, r.error_code)}
              </span>
            </td>
            <td className="mono" data-label="Member" data-member={r.member_id}>
              <Link to={`members/${encodeURIComponent(r.member_id)}`} title={r.member_id}>
                {shortId(r.member_id)}
              </Link>
            </td>
            <td data-label="Model">
              <span>
                <span className="mono">{r.model ?? '-'}</span>{' '}
                <small className="mono muted">{r.endpoint}</small>
              </span>
            </td>
            <td data-label="Code / limit">{r.limit ?? r.error_code ?? '-'}</td>
            <td data-label="Latency">{r.latency_ms} ms</td>
            <td className="wide" data-label="Tokens">
              {r.total_tokens.toLocaleString('en')}
            </td>
            <td className="mono" data-label="Request">
              <span>
                <Link to={logsLink(props.filters, r.request_id)}>{r.request_id}</Link>
                {r.trace_url ? (
                  <>
                    {' '}
                    <TraceLink entry={r} />
                  </>
                ) : null}
              </span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * The newest requests, again every 2 s while the tab is visible (paused while it is hidden), at most
 * 200 rows, for 10 minutes at most.
 */
function LiveTail(props: { filters: Filters; onStop: () => void }) {
  const [rows, setRows] = useState<RequestLogEntry[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [visible, setVisible] = useState(document.visibilityState === 'visible');
  const started = useRef(Date.now());
  const now = useNow(1000);
  const filterKey = JSON.stringify(props.filters);
  const onStop = useRef(props.onStop);
  onStop.current = props.onStop;
  useEffect(() => {
    const f = JSON.parse(filterKey) as Filters;
    let live = true;
    const look = async () => {
      if (document.visibilityState !== 'visible') return;
      if (Date.now() - started.current > TAIL_FOR_MS) {
        onStop.current();
        return;
      }
      try {
        const page = await api<RequestLogList>('GET', `/admin/logs${query({ ...f, limit: PAGE })}`);
        if (!live) return;
        setError(null);
        setRows((old) => {
          const seen = new Set(old.map((r) => `${r.at}.${r.request_id}`));
          const fresh = page.data.filter((r) => !seen.has(`${r.at}.${r.request_id}`));
          return [...fresh, ...old].sort((a, b) => b.at - a.at).slice(0, TAIL_ROWS);
        });
      } catch (e) {
        if (live) setError(e);
      }
    };
    void look();
    const t = setInterval(look, TAIL_MS);
    const onVisibility = () => setVisible(document.visibilityState === 'visible');
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      live = false;
      clearInterval(t);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [filterKey]);
  const left = Math.max(0, Math.round((TAIL_FOR_MS - (now - started.current)) / 60_000));
  return (
    <>
      <div className="titlebar">
        <Button kind="primary" onClick={props.onStop} label="Stop the live tail">
          Stop
        </Button>
        <span role="status">
          {visible
            ? `Live: every ${TAIL_MS / 1000} s, the newest ${TAIL_ROWS} kept, stops in ${left} min.`
            : 'Paused while the tab is hidden.'}
        </span>
      </div>
      <ErrorNote error={error} />
      <LogTable rows={rows} filters={props.filters} />
      {rows.length === 0 && !error ? <p>Waiting for requests…</p> : null}
    </>
  );
}

/** One request: what happened, and for a refusal the limit, its live state and when it resets. */
function RequestDetail(props: { requestId: string; onClose: () => void }) {
  const entry = useLoad(
    () => api<RequestLogDetail>('GET', `/admin/logs/${encodeURIComponent(props.requestId)}`),
    props.requestId,
  );
  const r = entry.data?.request_id === props.requestId ? entry.data : undefined;
  const notFound = entry.error instanceof ApiFailure && entry.error.status === 404;
  return (
    <section className="panel" aria-labelledby="request-title" data-testid="request-detail">
      <div className="titlebar">
        <h2 id="request-title">
          Request <span className="mono">{props.requestId}</span>
        </h2>
        <Button onClick={props.onClose}>Close</Button>
      </div>
      {notFound ? (
        <p role="alert">
          No request with this id in the log. It may be older than the log's retention, or not written yet (a
          few seconds after the answer).
        </p>
      ) : (
        <ErrorNote error={entry.error} />
      )}
      {r ? (
        <>
          <p className="lead">
            <span className={badge(r.status)}>
              {r.status} {statusText(r.status, r.error_code)}
            </span>{' '}
            {r.refused ? 'Refused before it reached a model.' : r.status < 400 ? 'Answered.' : 'Failed.'}
          </p>
          {r.limit ? <RefusedBy entry={r} /> : null}
          <dl className="facts">
            <dt>Time</dt>
            <dd>{utc(r.at)}</dd>
            <dt>Member</dt>
            <dd className="mono">
              <Link to={`members/${encodeURIComponent(r.member_id)}`}>{r.member_id}</Link>
            </dd>
            <dt>Key</dt>
            <dd className="mono">{r.key_id}</dd>
            <dt>Model</dt>
            <dd className="mono">{r.model ?? '-'}</dd>
            <dt>Endpoint</dt>
            <dd className="mono">{r.endpoint}</dd>
            <dt>Error code</dt>
            <dd className="mono">{r.error_code ?? '-'}</dd>
            <dt>Latency</dt>
            <dd>
              {r.latency_ms} ms{r.first_token_ms !== null ? `, first token after ${r.first_token_ms} ms` : ''}
            </dd>
            <dt>Tokens</dt>
            <dd>
              {r.prompt_tokens.toLocaleString('en')} in, {r.completion_tokens.toLocaleString('en')} out
              {r.batch ? ' (batch)' : ''}
            </dd>
            <dt>Trace id</dt>
            <dd>
              {r.trace_id ? (
                <span>
                  <span className="mono">{r.trace_id}</span> {r.trace_url ? <TraceLink entry={r} /> : null}{' '}
                  <Link to={logsLink({ trace_id: r.trace_id })}>All requests of this trace</Link>
                </span>
              ) : (
                'not traced (tracing off, or not sampled)'
              )}
            </dd>
          </dl>
          <p>
            <Link to={logsLink({ member: r.member_id })}>All requests of this member</Link> ·{' '}
            <Link to={logsLink({ key: r.key_id })}>All requests of this key</Link>
          </p>
          <Bodies entry={r} />
        </>
      ) : null}
    </section>
  );
}

/** The request's trace in the operator's trace viewer (TRACE_URL_TEMPLATE), in a new tab. */
function TraceLink(props: { entry: RequestLogEntry }) {
  const r = props.entry;
  return (
    <a
      href={r.trace_url ?? undefined}
      target="_blank"
      rel="noreferrer"
      aria-label={`Trace of ${r.request_id} (opens the trace viewer)`}
    >
      trace
    </a>
  );
}

/** The limit that refused a request: what it is, its live state on that key, when it resets. */
function RefusedBy(props: { entry: RequestLogEntry }) {
  const r = props.entry;
  const limit = r.limit as string;
  const state = useLoad(
    () => api<KeyLimitsState>('GET', `/admin/keys/${encodeURIComponent(r.key_id)}/limits`),
    r.key_id,
  );
  const now = useNow(5000);
  const live = state.data?.limits.find((l) => l.name === limit);
  return (
    <div className="callout" data-testid="refused-by">
      <p>
        <strong>Refused by {limitTitle(limit)}</strong> (<span className="mono">{limit}</span>),{' '}
        {ago(r.at, now)}.
      </p>
      {live ? <p>Now: {stateSentence(live)}</p> : null}
      <p>{resetSentence(limit, live, now)}</p>
      <p>
        <Link to={`members/${encodeURIComponent(r.member_id)}`}>Why this member is refused</Link>
      </p>
    </div>
  );
}

/** A JSON body indented for reading; anything else (a stream's frames, a cut body) as it is. */
function readable(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The request's bodies when body logging was on for its member or model (ADR 0110). */
function Bodies(props: { entry: RequestLogDetail }) {
  const b = props.entry.bodies;
  if (!b)
    return (
      <p data-testid="request-bodies">
        Bodies not logged for this member or model (or past their retention). An operator can turn body
        logging on on the member's page or the Models page.
      </p>
    );
  return (
    <div data-testid="request-bodies">
      {(
        [
          ['Request body', b.request, b.request_truncated],
          ['Response body', b.response, b.response_truncated],
        ] as const
      ).map(([title, text, cut]) => (
        <div key={title}>
          <h3>
            {title}
            {cut ? ' (truncated)' : ''}
          </h3>
          {/* Scrolls in its own box: focusable so that keyboard users can scroll it. */}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable (axe scrollable-region-focusable) */}
          <section className="body-log" aria-label={title} tabIndex={0}>
            <pre className="mono">{text ? readable(text) : '-'}</pre>
          </section>
        </div>
      ))}
    </div>
  );
}
