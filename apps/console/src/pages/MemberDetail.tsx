import {
  type AdminBatch,
  type AdminBatchList,
  type AdminKey,
  type AdminMember,
  type DailyUsage,
  type LimitState,
  type MemberQuotas,
  type MemberStoredResponses,
  type MintedKey,
  parseMoney,
  TIERS,
  UpdateMemberRequestSchema,
} from '@infer/contracts';
import { type FormEvent, Fragment, useState } from 'react';
import { InviteButton } from '../account/InviteButton.js';
import { api, query } from '../api.js';
import { useConfirm } from '../confirm.js';
import { ago, utc } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { lifecycleBody, lifecycleOf } from '../key-form.js';
import {
  AllowLists,
  FormProblems,
  failureFields,
  KeyActions,
  KeyExpiry,
  KeyStatus,
  LifecycleFields,
  OneTimeKeyDialog,
  useKeyDialogs,
} from '../keys.js';
import { RefusalsPanel } from '../refusals.js';
import { Link } from '../router.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { BarChart, Button, Dialog, ErrorNote, Field, Words } from '../ui.js';
import { fieldErrors } from '../validate.js';

type Detail = AdminMember & { api_keys: AdminKey[] };

export function MemberDetailPage(props: { id: string }) {
  const canWrite = useCanWrite();
  const detail = useLoad(
    () => api<Detail>('GET', `/admin/members/${encodeURIComponent(props.id)}`),
    props.id,
  );
  const usage = useLoad(
    () => api<DailyUsage>('GET', `/admin/usage/daily${query({ member: props.id, group_by: 'model' })}`),
    props.id,
  );
  const [failure, setFailure] = useState<unknown>(null);
  const [minting, setMinting] = useState(false);
  const [minted, setMinted] = useState<MintedKey | null>(null);
  const [tier, setTier] = useState('');
  const now = useNow(30_000);
  const confirm = useConfirm();
  const m = detail.data;
  const key = useKeyDialogs<AdminKey>({
    owner: () => m?.name ?? '',
    // A key row, and so its dialogs, exists only once the member is loaded.
    tier: () => m?.tier ?? 'community',
    reload: () => detail.reload(),
    onRevoked: setFailure,
  });

  /** `rethrow`: the failure goes to the caller (a confirmation dialog shows it). */
  const patch = async (body: Record<string, unknown>, rethrow = false) => {
    setFailure(null);
    try {
      await api('PATCH', `/admin/members/${encodeURIComponent(props.id)}`, body);
      detail.reload();
    } catch (error) {
      if (rethrow) throw error;
      setFailure(error);
    }
  };

  if (detail.error) return <ErrorNote error={detail.error} />;
  if (!m) return <p className="loading">Loading…</p>;
  return (
    <section>
      <p>
        <Link to="members">← Members</Link>
      </p>
      <div className="titlebar">
        <h1>{m.name}</h1>
        {m.suspended ? <span className="badge danger">suspended</span> : null}
      </div>
      <dl className="facts">
        <dt>Id</dt>
        <dd className="mono">{m.id}</dd>
        <dt>Email</dt>
        <dd>{m.email ?? '-'}</dd>
        <dt>Billing anchor</dt>
        <dd>{utc(m.billing_anchor)}</dd>
        <dt>Created</dt>
        <dd>{utc(m.created_at)}</dd>
        <dt>Request bodies</dt>
        <dd data-testid="member-log-bodies">{m.log_bodies ? 'logged' : 'not logged'}</dd>
      </dl>
      {confirm.element}
      <div className="row">
        <Field
          label="Tier"
          name="tier"
          value={tier || m.tier}
          options={TIERS}
          onChange={setTier}
          hint={canWrite ? 'Applies to every key of the member at once.' : READ_ONLY_REASON}
        />
        <div className="field">
          <Button
            disabled={!canWrite || !tier || tier === m.tier}
            reason={canWrite ? 'Pick another tier first.' : READ_ONLY_REASON}
            onClick={() => {
              const active = m.api_keys.filter((k) => !k.revoked_at).length;
              confirm.ask({
                title: `Move ${m.name} to the ${tier} tier?`,
                body: (
                  <p>
                    {active} {active === 1 ? 'key' : 'keys'} of this member move from the {m.tier} to the{' '}
                    {tier} tier at once: their models and limits change with the next request.
                  </p>
                ),
                confirmLabel: `Move to ${tier}`,
                action: () => api('PATCH', `/admin/members/${encodeURIComponent(m.id)}`, { tier }),
                done: `${m.name} is now on the ${tier} tier.`,
                onDone: () => {
                  setTier('');
                  detail.reload();
                },
              });
            }}
          >
            Change tier
          </Button>
        </div>
        <div className="field">
          <Button
            kind={m.suspended ? 'plain' : 'danger'}
            disabled={!canWrite}
            reason={READ_ONLY_REASON}
            onClick={() => {
              const active = m.api_keys.filter((k) => !k.revoked_at).length;
              confirm.ask(
                m.suspended
                  ? {
                      title: `Unsuspend ${m.name}?`,
                      body: <p>The member's {active} active keys work again at once.</p>,
                      confirmLabel: 'Unsuspend member',
                      action: () => patch({ suspended: false }, true),
                      done: `${m.name} is no longer suspended.`,
                    }
                  : {
                      title: `Suspend ${m.name}?`,
                      body: (
                        <p>
                          Every key of {m.name} ({active} active) is refused with 401 until the member is
                          unsuspended.
                        </p>
                      ),
                      confirmLabel: 'Suspend member',
                      danger: true,
                      action: () => patch({ suspended: true }, true),
                      done: `${m.name} is suspended.`,
                    },
              );
            }}
          >
            {m.suspended ? 'Unsuspend' : 'Suspend'}
          </Button>
        </div>
        <div className="field">
          <Button
            disabled={!canWrite}
            reason={READ_ONLY_REASON}
            onClick={() =>
              confirm.ask(
                m.log_bodies
                  ? {
                      title: `Stop logging ${m.name}'s bodies?`,
                      body: (
                        <p>
                          New requests are logged without their bodies. Bodies already kept stay until their
                          retention.
                        </p>
                      ),
                      confirmLabel: 'Stop logging bodies',
                      action: () => patch({ log_bodies: false }, true),
                      done: `${m.name}'s bodies are no longer logged.`,
                    }
                  : {
                      title: `Log ${m.name}'s request and response bodies?`,
                      body: (
                        <p>
                          The request and response bodies of every request by {m.name}'s keys are kept, with
                          secrets redacted and each body capped, for a few days
                          (REQUEST_LOG_BODY_RETENTION_DAYS), and shown in the request log to operators. Turn
                          it on only while you debug.
                        </p>
                      ),
                      confirmLabel: 'Log bodies',
                      action: () => patch({ log_bodies: true }, true),
                      done: `${m.name}'s bodies are logged from the next request.`,
                    },
              )
            }
          >
            {m.log_bodies ? 'Stop logging bodies' : 'Log bodies'}
          </Button>
        </div>
        <div className="field">
          <InviteButton memberId={m.id} email={m.email} canWrite={canWrite} />
        </div>
      </div>
      <AnchorEditor
        memberId={m.id}
        anchor={m.billing_anchor}
        canWrite={canWrite}
        onSaved={() => detail.reload()}
      />
      <BudgetEditor member={m} canWrite={canWrite} onSaved={() => detail.reload()} />
      <ErrorNote error={failure} />

      <div className="titlebar">
        <h2>API keys</h2>
        <Button
          kind="primary"
          disabled={!canWrite}
          reason={READ_ONLY_REASON}
          onClick={() => setMinting(true)}
        >
          Mint key
        </Button>
      </div>
      <table className="cards">
        <caption className="sr-only">API keys</caption>
        <thead>
          <tr>
            <th scope="col">Prefix</th>
            <th scope="col">Name</th>
            <th scope="col" className="wide">
              Created
            </th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">Allowed</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {m.api_keys.map((k) => (
            <tr key={k.id}>
              <td className="mono" data-label="Prefix">
                {k.prefix}
              </td>
              <td className="name" data-label="Name">
                <Words text={k.name} />
              </td>
              <td className="wide" data-label="Created">
                {utc(k.created_at)}
              </td>
              <td data-label="Last used">{ago(k.last_used_at, now)}</td>
              <td data-label="Expires">
                <KeyExpiry expiresAt={k.expires_at} now={now} />
              </td>
              <td data-label="Allowed">
                <AllowLists apiKey={k} />
              </td>
              <td data-label="Status">
                <span>
                  <KeyStatus apiKey={k} now={now} />
                  <br />
                  <small className="muted">{k.limits ? 'own limits' : 'tier limits'}</small>
                </span>
              </td>
              <td data-label="Actions">
                <KeyActions
                  apiKey={k}
                  owner={m.name}
                  canWrite={canWrite}
                  open={key}
                  ask={confirm.ask}
                  onRotated={(minted) => {
                    setMinted(minted);
                    detail.reload();
                  }}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {m.api_keys.length === 0 ? <p>No keys yet.</p> : null}

      <RefusalsPanel memberId={m.id} />

      <QuotaPanel memberId={m.id} />

      <StoredResponsesPanel memberId={m.id} memberName={m.name} canWrite={canWrite} />

      <BatchesPanel memberId={m.id} />

      <h2>Usage, last 30 days</h2>
      <ErrorNote error={usage.error} />
      <BarChart
        title="Tokens per model per day (UTC)"
        unit="Tokens"
        bars={(usage.data?.data ?? []).map((r) => ({
          label: `${r.day.slice(5)} ${r.model ?? '-'}`,
          value: r.total_tokens,
        }))}
      />

      <MintDialog
        open={minting}
        memberId={m.id}
        tier={m.tier}
        onClose={() => setMinting(false)}
        onMinted={(k) => {
          setMinting(false);
          setMinted(k);
          detail.reload();
        }}
      />
      <OneTimeKeyDialog minted={minted} onClose={() => setMinted(null)} />
      {key.dialogs}
    </section>
  );
}

function MintDialog(props: {
  open: boolean;
  memberId: string;
  tier: AdminMember['tier'];
  onClose: () => void;
  onMinted: (k: MintedKey) => void;
}) {
  const [name, setName] = useState('default');
  const [life, setLife] = useState(() => lifecycleOf());
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const { body, errors: errs } = lifecycleBody(life);
    if (!name.trim()) errs.name = ['Give the key a name.'];
    setErrors(errs);
    if (Object.keys(errs).length) return;
    try {
      props.onMinted(
        await api<MintedKey>('POST', `/admin/members/${encodeURIComponent(props.memberId)}/keys`, {
          name,
          ...body,
        }),
      );
    } catch (error) {
      setErrors(failureFields(error));
    }
  };
  return (
    <Dialog open={props.open} title="Mint an API key" onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <Field
          label="Key name"
          name="name"
          value={name}
          onChange={setName}
          error={errors.name?.join(' ')}
          required
        />
        <LifecycleFields value={life} onChange={setLife} tier={props.tier} errors={errors} />
        <FormProblems errors={errors} fields={['name']} />
        <div className="actions">
          <Button onClick={props.onClose}>Cancel</Button>
          <Button type="submit" kind="primary">
            Mint
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

/**
 * The member's monthly budget (its own limits, PUT /admin/members/{id}/limits): inherited from the
 * tier (shown), an own amount in dollars, or unlimited; it resets on the 1st of each month (UTC).
 */
function BudgetEditor(props: { member: Detail; canWrite: boolean; onSaved: () => void }) {
  const m = props.member;
  const own = m.limits?.budget.member_per_month;
  const tierValue = m.tier_limits?.budget?.member_per_month;
  const [mode, setMode] = useState(own === undefined ? 'inherit' : own === null ? 'unlimited' : 'value');
  const [value, setValue] = useState(own === undefined || own === null ? '' : String(own));
  const [error, setError] = useState<string | undefined>();
  const [saved, setSaved] = useState(false);
  const next = new Date();
  const reset = Date.UTC(next.getUTCFullYear(), next.getUTCMonth() + 1, 1);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    setError(undefined);
    if (mode === 'value' && parseMoney(value.trim()) === null) {
      setError('The budget must be an amount of dollars such as 250 or 99.50 (at most 9 decimals).');
      return;
    }
    const limits =
      mode === 'inherit'
        ? null
        : { budget: { member_per_month: mode === 'unlimited' ? null : value.trim() } };
    try {
      await api('PUT', `/admin/members/${encodeURIComponent(m.id)}/limits`, { limits });
      setSaved(true);
      props.onSaved();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  };
  return (
    <form className="row" onSubmit={save} noValidate aria-label="Monthly budget">
      <div className="field">
        <label htmlFor="budget-mode">Monthly budget of the member</label>
        <select id="budget-mode" name="budget-mode" value={mode} onChange={(e) => setMode(e.target.value)}>
          <option value="inherit">{`inherited from tier (${tierValue === undefined || tierValue === null ? 'unlimited' : `$${tierValue}`})`}</option>
          <option value="value">own amount</option>
          <option value="unlimited">unlimited</option>
        </select>
        <small>Per calendar month (UTC); resets {utc(reset)}. Spent: 402 budget_exceeded.</small>
      </div>
      {mode === 'value' ? (
        <Field label="Budget (USD)" name="member_per_month" value={value} onChange={setValue} error={error} />
      ) : null}
      <div className="field">
        <Button type="submit" disabled={!props.canWrite} reason={READ_ONLY_REASON}>
          Save budget
        </Button>
      </div>
      {mode !== 'value' && error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      {saved ? (
        <p role="status" className="field">
          Saved.
        </p>
      ) : null}
    </form>
  );
}

/**
 * The billing anchor (start of the member's billing periods: chat-G's allowance period), edited as a
 * UTC date and checked with the API's UpdateMemberRequest contract before it is sent.
 */
function AnchorEditor(props: { memberId: string; anchor: number; canWrite: boolean; onSaved: () => void }) {
  const current = new Date(props.anchor * 1000).toISOString().slice(0, 10);
  const [value, setValue] = useState(current);
  const [error, setError] = useState<string | undefined>();
  const [failure, setFailure] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    setFailure(null);
    const body = { billing_anchor: value };
    const errs = fieldErrors(UpdateMemberRequestSchema, body);
    setError(errs.billing_anchor ?? errs._form);
    if (Object.keys(errs).length) return;
    try {
      await api('PATCH', `/admin/members/${encodeURIComponent(props.memberId)}`, body);
      setSaved(true);
      props.onSaved();
    } catch (err) {
      setFailure(err);
    }
  };
  return (
    <form className="row" onSubmit={save} noValidate aria-label="Billing anchor">
      <Field
        label="Billing anchor (UTC date)"
        name="billing_anchor"
        type="date"
        value={value}
        onChange={(v) => {
          setValue(v);
          setSaved(false);
        }}
        error={error}
        hint={props.canWrite ? 'Billing periods start on this day of each month.' : READ_ONLY_REASON}
      />
      <div className="field">
        <Button type="submit" disabled={!props.canWrite || value === current} reason={READ_ONLY_REASON}>
          Save anchor
        </Button>
      </div>
      <ErrorNote error={failure} />
      {saved ? (
        <p role="status" className="field">
          Saved.
        </p>
      ) : null}
    </form>
  );
}

const WINDOW_LABEL: Record<string, string> = {
  month: 'calendar month',
  billing_period: 'billing period',
  rolling: 'rolling window',
  day: 'day (UTC)',
};

function quotaLabel(l: LimitState): string {
  if (l.name.endsWith('.allowance_tokens')) return `${l.model} allowance`;
  if (l.name.endsWith('.rolling_tokens')) return `${l.model} rolling budget`;
  if (l.name === 'images.requests_per_month') return 'Images per month';
  if (l.name === 'search.requests_per_day') return 'Web searches per day';
  return l.name;
}

function QuotaRows(props: { rows: LimitState[] }) {
  return (
    <>
      {props.rows.map((l) => (
        <tr key={l.name}>
          <td data-label="Quota">
            <span>
              {quotaLabel(l)} <span className="mono wide">({l.name})</span>
            </span>
          </td>
          <td data-label="Period">{WINDOW_LABEL[l.window] ?? l.window}</td>
          <td data-label="Used">
            <span>
              <meter min={0} max={l.limit} value={l.used} aria-label={`${quotaLabel(l)} used`} />{' '}
              {l.used.toLocaleString('en')} {l.unit}
            </span>
          </td>
          <td data-label="Left">
            <span>
              {l.remaining.toLocaleString('en')} of {l.limit.toLocaleString('en')}
              {l.remaining <= 0 ? <span className="badge danger">spent ({l.status})</span> : null}
            </span>
          </td>
          <td className="wide" data-label="Resets">
            {l.resets_at ? utc(l.resets_at) : '-'}
          </td>
        </tr>
      ))}
    </>
  );
}

/**
 * Every quota of the member as the gateway's limits engine counts it (GET /admin/members/{id}/quotas):
 * allowances per month or billing period and images per month (the member's), rolling budgets and
 * searches per day (each key's). Polled every 15 s.
 */
/**
 * The member's stored responses (the Responses API's `store`, kept for RESPONSES_RETENTION_DAYS): how
 * many, and a purge behind a confirmation (admin or owner; audited).
 */
function StoredResponsesPanel(props: { memberId: string; memberName: string; canWrite: boolean }) {
  const path = `/admin/members/${encodeURIComponent(props.memberId)}/stored-responses`;
  const stored = useLoad(() => api<MemberStoredResponses>('GET', path), props.memberId);
  const [confirming, setConfirming] = useState(false);
  const [failure, setFailure] = useState<unknown>(null);
  const [purged, setPurged] = useState<number | null>(null);
  const count = stored.data?.count;
  return (
    <section aria-labelledby="stored-responses-title">
      <div className="titlebar">
        <h2 id="stored-responses-title">Stored responses</h2>
        <Button
          kind="danger"
          disabled={!props.canWrite || !count}
          reason={props.canWrite ? 'Nothing to purge.' : READ_ONLY_REASON}
          onClick={() => setConfirming(true)}
        >
          Purge stored responses
        </Button>
      </div>
      <ErrorNote error={stored.error ?? failure} />
      <p>
        {count === undefined ? 'Loading…' : <span data-testid="stored-responses-count">{count}</span>}
        {count === undefined
          ? null
          : ` stored response${count === 1 ? '' : 's'} (kept for previous_response_id and GET /v1/responses/{id} until they expire).`}
      </p>
      {purged !== null ? <p role="status">Purged {purged}.</p> : null}
      <Dialog open={confirming} title="Purge stored responses?" onClose={() => setConfirming(false)}>
        <p>
          The {count} stored response{count === 1 ? '' : 's'} of {props.memberName} are deleted at once: their
          ids can no longer be retrieved or continued with previous_response_id. This cannot be undone.
        </p>
        <div className="actions">
          <Button onClick={() => setConfirming(false)}>Cancel</Button>
          <Button
            kind="danger"
            onClick={async () => {
              setConfirming(false);
              setFailure(null);
              try {
                const r = await api<{ deleted: number }>('DELETE', path);
                setPurged(r.deleted);
              } catch (error) {
                setFailure(error);
              }
              stored.reload();
            }}
          >
            Purge
          </Button>
        </div>
      </Dialog>
    </section>
  );
}

function QuotaPanel(props: { memberId: string }) {
  const quotas = useLoad(
    () => api<MemberQuotas>('GET', `/admin/members/${encodeURIComponent(props.memberId)}/quotas`),
    props.memberId,
    15_000,
  );
  const q = quotas.data;
  return (
    <section aria-labelledby="quotas-title">
      <h2 id="quotas-title">Quotas</h2>
      <ErrorNote error={quotas.error} />
      {q && !q.enabled ? <p>Limits are off on this gateway: nothing is enforced.</p> : null}
      <table className="cards">
        <caption className="sr-only">Quotas of this member</caption>
        <thead>
          <tr>
            <th scope="col">Quota</th>
            <th scope="col">Period</th>
            <th scope="col">Used</th>
            <th scope="col">Left</th>
            <th scope="col" className="wide">
              Resets
            </th>
          </tr>
        </thead>
        <tbody>
          <QuotaRows rows={q?.member ?? []} />
          {(q?.keys ?? []).map((k) =>
            k.quotas.length ? (
              <Fragment key={k.id}>
                <tr>
                  <th scope="rowgroup" colSpan={5}>
                    Key <span className="mono">{k.prefix}</span> ({k.name})
                  </th>
                </tr>
                <QuotaRows rows={k.quotas} />
              </Fragment>
            ) : null,
          )}
        </tbody>
      </table>
      {q && q.keys_omitted > 0 ? <p>{q.keys_omitted} older active keys are not shown.</p> : null}
    </section>
  );
}

/** Polling period of the batches panel while one of the shown batches is still running. */
const BATCH_POLL_MS = 3000;
const BATCH_PAGE = 20;
const RUNNING: readonly string[] = ['validating', 'in_progress', 'finalizing', 'cancelling'];
const BATCH_BADGE: Record<string, string> = {
  completed: 'badge ok',
  failed: 'badge danger',
  expired: 'badge danger',
  cancelled: 'badge danger',
};

/** Column names, also shown before each cell when the table is laid out as cards (narrow screens). */
const BATCH_COLUMNS = ['Id', 'Endpoint', 'Status', 'Created', 'Requests', 'Expires', 'Output / error file'];

function BatchRow(props: { b: AdminBatch }) {
  const b = props.b;
  const c = b.request_counts;
  const [id, endpoint, status, created, requests, expires, files] = BATCH_COLUMNS;
  return (
    <tr>
      <td className="mono" data-label={id}>
        {b.id}
      </td>
      <td className="mono" data-label={endpoint}>
        {b.endpoint}
      </td>
      <td data-label={status}>
        <span className={BATCH_BADGE[b.status] ?? 'badge'}>{b.status}</span>
      </td>
      <td data-label={created}>{utc(b.created_at)}</td>
      <td data-label={requests}>
        <span>
          <progress
            max={Math.max(1, c.total)}
            value={c.completed + c.failed}
            aria-label={`Progress of batch ${b.id}`}
          />{' '}
          {c.completed.toLocaleString('en')} done, {c.failed.toLocaleString('en')} failed of{' '}
          {c.total.toLocaleString('en')}
        </span>
      </td>
      <td data-label={expires}>{b.expires_at ? utc(b.expires_at) : '-'}</td>
      <td className="mono" data-label={files}>
        <span>
          {b.output_file_id ?? '-'}
          <br />
          {b.error_file_id ?? '-'}
        </span>
      </td>
    </tr>
  );
}

/**
 * The member's batches (GET /admin/members/{id}/batches), one page at a time, newest first. Polled
 * every few seconds while a shown batch is running (not in a hidden tab: useLoad), and not at all
 * once every shown batch is final.
 */
function BatchesPanel(props: { memberId: string }) {
  // Cursors of the pages before the current one ('' = the first page).
  const [trail, setTrail] = useState<string[]>([]);
  const [after, setAfter] = useState('');
  const [running, setRunning] = useState(false);
  const batches = useLoad(
    async () => {
      const page = await api<AdminBatchList>(
        'GET',
        `/admin/members/${encodeURIComponent(props.memberId)}/batches${query({ after: after || undefined, limit: BATCH_PAGE })}`,
      );
      setRunning(page.data.some((b) => RUNNING.includes(b.status)));
      return page;
    },
    `${props.memberId}|${after}`,
    running ? BATCH_POLL_MS : undefined,
  );
  const page = batches.data;
  return (
    <section aria-labelledby="batches-title">
      <div className="titlebar">
        <h2 id="batches-title">Batches</h2>
        {running ? (
          <span className="badge" role="status">
            updating every {BATCH_POLL_MS / 1000} s
          </span>
        ) : null}
      </div>
      <ErrorNote error={batches.error} />
      <table className="cards">
        <caption className="sr-only">Batches of this member, newest first</caption>
        <thead>
          <tr>
            {BATCH_COLUMNS.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {(page?.data ?? []).map((b) => (
            <BatchRow key={b.id} b={b} />
          ))}
        </tbody>
      </table>
      {page && page.data.length === 0 ? <p>No batches.</p> : null}
      {trail.length || page?.next_after ? (
        <div className="row">
          <Button
            disabled={!trail.length}
            onClick={() => {
              setAfter(trail.at(-1) ?? '');
              setTrail(trail.slice(0, -1));
            }}
          >
            Newer batches
          </Button>
          <Button
            disabled={!page?.next_after}
            onClick={() => {
              setTrail([...trail, after]);
              setAfter(page?.next_after ?? '');
            }}
          >
            Older batches
          </Button>
        </div>
      ) : null}
    </section>
  );
}
