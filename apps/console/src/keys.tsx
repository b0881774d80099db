// Key dialogs shared by the member page and the Keys page: the one-time display of a new secret, the
// live limit state of a key, the revoke and rotate confirmations, the expiry cell, a key row's actions,
// and the lifecycle fields (expiry, allowed models, allowed IPs) of the mint and edit forms.
import {
  type AdminKey,
  formatMoney,
  type KeyLimitsState,
  type MintedKey,
  parseDuration,
  type Tier,
} from '@infer/contracts';
import { type FormEvent, Fragment, type ReactNode, useId, useState } from 'react';
import { ApiFailure, api } from './api.js';
import type { ConfirmRequest } from './confirm.js';
import { expiryText, utc } from './format.js';
import { useLoad } from './hooks.js';
import { fieldOfParam, type Lifecycle, lifecycleBody, lifecycleOf } from './key-form.js';
import { LimitsDialog } from './limits-editor.js';
import { READ_ONLY_REASON } from './session.js';
import { Button, Dialog, ErrorNote, Field } from './ui.js';

/** The new secret, shown this once: Escape does not close it, only the explicit button. */
export function OneTimeKeyDialog(props: { minted: MintedKey | null; onClose: () => void }) {
  const graceUntil = props.minted?.record.old_secret_valid_until ?? null;
  const rotated = Boolean(props.minted?.record.rotated_at);
  return (
    <Dialog
      open={Boolean(props.minted)}
      title={rotated ? 'The new secret of this key' : 'Your new API key'}
      onClose={props.onClose}
      dismissable={false}
    >
      <p>
        <strong>This is the only time the key is shown.</strong> Store it now; afterwards only its prefix is
        visible.
      </p>
      <p className="secret mono" data-testid="minted-key">
        {props.minted?.key}
      </p>
      {rotated ? (
        <p data-testid="grace-note">
          {graceUntil ? (
            <>
              The old secret keeps working until <span className="nowrap">{utc(graceUntil)}</span>, then
              stops.
            </>
          ) : (
            'The old secret stopped working at once.'
          )}
        </p>
      ) : null}
      <div className="actions">
        <Button onClick={() => navigator.clipboard?.writeText(props.minted?.key ?? '')}>Copy</Button>
        <Button kind="primary" onClick={props.onClose}>
          I have stored the key
        </Button>
      </div>
    </Dialog>
  );
}

/** A key's status: revoked, expired or active, its expiry, and the old secret's grace while it runs. */
export function KeyStatus(props: { apiKey: AdminKey; now: number }) {
  const k = props.apiKey;
  const grace = k.old_secret_valid_until && k.old_secret_valid_until * 1000 > props.now;
  if (k.revoked_at) return <span>revoked {utc(k.revoked_at)}</span>;
  const expired = k.expires_at !== null && k.expires_at * 1000 <= props.now;
  return (
    <span>
      {expired ? <span className="badge danger">expired</span> : 'active'}
      {grace ? (
        <>
          <br />
          <small className="muted">
            old secret valid until <span className="nowrap">{utc(k.old_secret_valid_until)}</span>
          </small>
        </>
      ) : null}
    </span>
  );
}

/** "expires in 3 d" with the exact time as a tooltip, or "never". */
export function KeyExpiry(props: { expiresAt: number | null; now: number }) {
  const soon = props.expiresAt !== null && props.expiresAt * 1000 - props.now < 7 * 86_400_000;
  return (
    <span
      title={props.expiresAt ? utc(props.expiresAt) : undefined}
      className={soon ? 'nowrap warn' : 'nowrap'}
    >
      {expiryText(props.expiresAt, props.now)}
    </span>
  );
}

/** A limit's numbers in its unit (a budget in dollars). */
function amount(n: number, unit: string): string {
  return unit === 'nano_usd' ? `$${formatMoney(Math.max(0, n))}` : `${n.toLocaleString('en')} ${unit}`;
}

/** The live state of every limit of a key, as the gateway computes it (GET /admin/keys/{id}/limits). */
export function LimitsStateDialog(props: { apiKey: { id: string; prefix: string }; onClose: () => void }) {
  const state = useLoad(
    () => api<KeyLimitsState>('GET', `/admin/keys/${encodeURIComponent(props.apiKey.id)}/limits`),
    props.apiKey.id,
    10_000,
  );
  return (
    <Dialog open title={`Live limits of ${props.apiKey.prefix}`} onClose={props.onClose}>
      <ErrorNote error={state.error} />
      {state.data && !state.data.enabled ? <p>Limits are off on this gateway.</p> : null}
      <table>
        <caption className="sr-only">Limits</caption>
        <thead>
          <tr>
            <th scope="col">Limit</th>
            <th scope="col">Used / limit</th>
            <th scope="col">Resets</th>
          </tr>
        </thead>
        <tbody>
          {(state.data?.limits ?? []).map((l) => (
            <tr key={l.name}>
              <td className="mono">{l.name}</td>
              <td>
                {amount(l.used, l.unit)} / {amount(l.limit, l.unit)}
                {l.remaining <= 0 ? <span className="badge danger">exhausted ({l.status})</span> : null}
              </td>
              <td>{l.resets_at ? utc(l.resets_at) : '-'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="actions">
        <Button kind="primary" onClick={props.onClose}>
          Close
        </Button>
      </div>
    </Dialog>
  );
}

/** Confirms and revokes a key; `onDone` gets the failure, if any. */
export function RevokeKeyDialog(props: {
  apiKey: { id: string; prefix: string; name: string } | null;
  owner: string;
  onClose: () => void;
  onDone: (error: unknown) => void;
}) {
  const k = props.apiKey;
  return (
    <Dialog open={Boolean(k)} title="Revoke this key?" onClose={props.onClose}>
      <p>
        Key <span className="mono">{k?.prefix}</span> ({k?.name}) of {props.owner} stops working at once. This
        cannot be undone.
      </p>
      <div className="actions">
        <Button onClick={props.onClose}>Cancel</Button>
        <Button
          kind="danger"
          onClick={async () => {
            props.onClose();
            if (!k) return;
            try {
              await api('POST', `/admin/keys/${encodeURIComponent(k.id)}/revoke`);
              props.onDone(null);
            } catch (error) {
              props.onDone(error);
            }
          }}
        >
          Revoke key
        </Button>
      </div>
    </Dialog>
  );
}

/** The grace period field of the rotate confirmation; writes what is typed into `holder`. */
function GraceField(props: { holder: { grace: string } }) {
  const [value, setValue] = useState(props.holder.grace);
  return (
    <Field
      label="Grace period of the old secret"
      name="grace"
      value={value}
      onChange={(v) => {
        setValue(v);
        props.holder.grace = v;
      }}
      hint="A duration such as 24h, 90m or 7d; 0 stops the old secret now."
    />
  );
}

/**
 * The confirmation of a rotation (useConfirm's ask): a new secret for the same key id, shown once; the
 * old secret keeps working for the grace period asked here (default 24 h, 0: revoked now).
 */
export function rotateRequest(
  k: { id: string; prefix: string; name: string },
  owner: string,
  onRotated: (minted: MintedKey) => void,
): ConfirmRequest {
  const holder = { grace: '24h' };
  return {
    title: `Rotate key ${k.prefix}?`,
    body: (
      <>
        <p>
          Key <span className="mono">{k.prefix}</span> ({k.name}) of {owner} gets a new secret, shown once.
          Its id, name, limits and allow-lists stay. The old secret keeps working for the grace period below
          (24 hours unless changed), then stops: whoever uses the key must switch to the new secret within it.
        </p>
        <GraceField holder={holder} />
      </>
    ),
    confirmLabel: 'Rotate key',
    action: () => {
      const grace = holder.grace.trim();
      if (parseDuration(grace) === null)
        return Promise.reject(
          new Error(`“${grace}” is not a grace period: give a duration such as 0, 15m, 24h or 7d.`),
        );
      return api<MintedKey>('POST', `/admin/keys/${encodeURIComponent(k.id)}/rotate`, { grace });
    },
    done: `Key ${k.prefix} rotated.`,
    onDone: (minted) => onRotated(minted as MintedKey),
  };
}

// ---- lifecycle fields: expiry, allowed models, allowed IPs ----

interface AdminModelRow {
  id: string;
  kind: string;
  tiers: string[];
  enabled: boolean;
}

/** A server failure as per-field sentences. */
export function failureFields(error: unknown): Record<string, string[]> {
  if (error instanceof ApiFailure) return { [fieldOfParam(error.param)]: [error.message] };
  return { _form: [error instanceof Error ? error.message : String(error)] };
}

function Problems(props: { id: string; list: string[] | undefined }) {
  if (!props.list?.length) return null;
  return (
    <div id={props.id} role="alert">
      {props.list.map((p) => (
        <small key={p} className="error block">
          {p}
        </small>
      ))}
    </div>
  );
}

/** The models `tier` reaches (enabled), for the allowed-models checkboxes. */
export function useTierModels(tier: Tier | undefined) {
  const all = useLoad(() => api<{ data: AdminModelRow[] }>('GET', '/admin/models'), 'models');
  const models = (all.data?.data ?? []).filter((m) => m.enabled && tier && m.tiers.includes(tier));
  return { models, error: all.error };
}

/** Expiry, allowed models (of the tier) and allowed IPs, with their problems beside each. */
export function LifecycleFields(props: {
  value: Lifecycle;
  onChange: (l: Lifecycle) => void;
  tier: Tier | undefined;
  errors: Record<string, string[]>;
}) {
  const id = useId();
  const l = props.value;
  const set = (patch: Partial<Lifecycle>) => props.onChange({ ...l, ...patch });
  const { models, error } = useTierModels(props.tier);
  const shown = [...new Set([...models.map((m) => m.id), ...l.models])];
  const e = props.errors;
  return (
    <>
      <fieldset className="group">
        <legend>Expiry</legend>
        <div className="row">
          <div className="field">
            <label htmlFor={`${id}-expiry`}>Expires</label>
            <select
              id={`${id}-expiry`}
              name="expiry"
              value={l.expiry}
              onChange={(ev) => set({ expiry: ev.target.value as Lifecycle['expiry'] })}
            >
              <option value="never">never</option>
              <option value="in">after a duration</option>
              <option value="at">at a date (UTC)</option>
            </select>
          </div>
          {l.expiry === 'in' ? (
            <div className="field">
              <label htmlFor={`${id}-in`}>Expires in</label>
              <input
                id={`${id}-in`}
                name="expires_in"
                value={l.expiresIn}
                onChange={(ev) => set({ expiresIn: ev.target.value })}
                aria-invalid={e.expiry ? true : undefined}
                aria-describedby={`${id}-expiry-p`}
              />
            </div>
          ) : null}
          {l.expiry === 'at' ? (
            <div className="field">
              <label htmlFor={`${id}-at`}>Expires at (UTC)</label>
              <input
                id={`${id}-at`}
                name="expires_at"
                type="datetime-local"
                value={l.expiresAt}
                onChange={(ev) => set({ expiresAt: ev.target.value })}
                aria-invalid={e.expiry ? true : undefined}
                aria-describedby={`${id}-expiry-p`}
              />
            </div>
          ) : null}
        </div>
        <div id={`${id}-expiry-p`}>
          {e.expiry ? null : (
            <small className="muted">
              {l.expiry === 'in' ? 'A duration such as 90m, 24h, 30d or 1w. ' : ''}
              After it the key answers 401 key_expired.
            </small>
          )}
          <Problems id={`${id}-expiry-err`} list={e.expiry} />
        </div>
      </fieldset>
      <fieldset className="group" aria-describedby={`${id}-models-hint`}>
        <legend>Allowed models</legend>
        <ErrorNote error={error} />
        <div className="checks">
          {shown.map((m) => (
            <label key={m} className="check">
              <input
                type="checkbox"
                name="allowed_models"
                value={m}
                checked={l.models.includes(m)}
                onChange={(ev) =>
                  set({
                    models: ev.target.checked ? [...l.models, m] : l.models.filter((x) => x !== m),
                  })
                }
              />{' '}
              <span className="mono">{m}</span>
            </label>
          ))}
        </div>
        <small id={`${id}-models-hint`} className="muted">
          None ticked: every model the {props.tier ?? 'member’s'} tier reaches. Ticked: only those.
        </small>
        <Problems id={`${id}-models-err`} list={e.allowed_models} />
      </fieldset>
      <div className="field">
        <label htmlFor={`${id}-ips`}>Allowed IP addresses (CIDR blocks, IPv4 or IPv6)</label>
        <textarea
          id={`${id}-ips`}
          name="allowed_ips"
          rows={3}
          value={l.ips}
          placeholder={'203.0.113.0/24\n2001:db8::/32'}
          onChange={(ev) => set({ ips: ev.target.value })}
          aria-invalid={e.allowed_ips ? true : undefined}
          aria-describedby={`${id}-ips-p`}
        />
        <div id={`${id}-ips-p`}>
          {e.allowed_ips ? null : (
            <small className="muted">
              One per line. Empty: any address. Other addresses get 403 ip_not_allowed.
            </small>
          )}
          <Problems id={`${id}-ips-err`} list={e.allowed_ips} />
        </div>
      </div>
    </>
  );
}

/** Changes a key's expiry and allow-lists (PATCH /admin/keys/{id}). */
export function EditKeyDialog(props: {
  apiKey: AdminKey;
  tier: Tier;
  onClose: () => void;
  onSaved: (k: AdminKey) => void;
}) {
  const [initial] = useState(() => lifecycleOf(props.apiKey));
  const [value, setValue] = useState(initial);
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [busy, setBusy] = useState(false);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    const { body, errors: errs } = lifecycleBody(value, Date.now(), initial);
    setErrors(errs);
    if (Object.keys(errs).length) return;
    setBusy(true);
    try {
      props.onSaved(await api<AdminKey>('PATCH', `/admin/keys/${encodeURIComponent(props.apiKey.id)}`, body));
    } catch (error) {
      setErrors(failureFields(error));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open title={`Edit key ${props.apiKey.prefix}`} onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <LifecycleFields value={value} onChange={setValue} tier={props.tier} errors={errors} />
        <FormProblems errors={errors} />
        <div className="actions">
          <Button onClick={props.onClose}>Cancel</Button>
          <Button type="submit" kind="primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save'}
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

/** Problems that belong to no field of the lifecycle form. */
export function FormProblems(props: { errors: Record<string, string[]>; fields?: string[] }) {
  const known = new Set(['expiry', 'allowed_models', 'allowed_ips', ...(props.fields ?? [])]);
  const rest = Object.entries(props.errors)
    .filter(([k]) => !known.has(k))
    .flatMap(([, v]) => v);
  if (!rest.length) return null;
  return (
    <p className="error" role="alert">
      {rest.join(' ')}
    </p>
  );
}

/** A key's allow-lists in tables: models, then address blocks, each whole (wrapping between them). */
export function AllowLists(props: { apiKey: AdminKey }): ReactNode {
  const k = props.apiKey;
  if (!k.allowed_models.length && !k.allowed_ips.length) return <span className="muted">any</span>;
  const list = (items: string[]) =>
    items.map((x, i) => (
      <Fragment key={x}>
        {i ? ', ' : ''}
        <span className="mono">{x}</span>
      </Fragment>
    ));
  return (
    <span>
      {list(k.allowed_models)}
      {k.allowed_models.length && k.allowed_ips.length ? <br /> : null}
      {list(k.allowed_ips)}
    </span>
  );
}

/** What a key row's actions open: useKeyDialogs' setters. */
export interface KeyDialogOpeners<K> {
  inspect(k: K): void;
  limits(k: K): void;
  edit(k: K): void;
  revoke(k: K): void;
}

/**
 * The actions cell of a keys table row (the Keys page and a member's page): its limits' live state, its
 * limits, edit, rotate (confirmed with `ask`, the new secret to `onRotated`) and revoke. Changes need
 * write access; a revoked key can only be looked at.
 */
export function KeyActions<K extends AdminKey>(props: {
  apiKey: K;
  owner: string;
  canWrite: boolean;
  open: KeyDialogOpeners<NoInfer<K>>;
  ask: (r: ConfirmRequest) => void;
  onRotated: (minted: MintedKey) => void;
}) {
  const { apiKey: k, open } = props;
  const closed = !props.canWrite || Boolean(k.revoked_at);
  const why = k.revoked_at ? 'Already revoked.' : READ_ONLY_REASON;
  return (
    <div className="actions">
      <Button onClick={() => open.inspect(k)} label={`State of ${k.prefix}`}>
        State
      </Button>
      <Button
        disabled={!props.canWrite}
        reason={READ_ONLY_REASON}
        onClick={() => open.limits(k)}
        label={`Limits of ${k.prefix}`}
      >
        Limits
      </Button>
      <Button disabled={closed} reason={why} onClick={() => open.edit(k)} label={`Edit ${k.prefix}`}>
        Edit
      </Button>
      <Button
        disabled={closed}
        reason={why}
        onClick={() => props.ask(rotateRequest(k, props.owner, props.onRotated))}
        label={`Rotate key ${k.prefix}`}
      >
        Rotate
      </Button>
      <Button
        kind="danger"
        disabled={closed}
        reason={why}
        onClick={() => open.revoke(k)}
        label={`Revoke ${k.prefix}`}
      >
        Revoke
      </Button>
    </div>
  );
}

/**
 * The dialogs a keys table opens on one key (revoke, its limits' live state, edit its expiry and
 * allow-lists, its limits) and the setters that open them: the Keys page and a member's page share them.
 * After a change the table reloads; a revocation also reports its outcome (`onRevoked`).
 */
export function useKeyDialogs<K extends AdminKey>(opts: {
  owner: (k: K) => string;
  tier: (k: K) => Tier;
  reload: () => void;
  onRevoked: (error: unknown) => void;
}) {
  const [revoking, setRevoking] = useState<K | null>(null);
  const [inspecting, setInspecting] = useState<K | null>(null);
  const [changing, setChanging] = useState<K | null>(null);
  const [limiting, setLimiting] = useState<K | null>(null);
  const dialogs = (
    <>
      <RevokeKeyDialog
        apiKey={revoking}
        owner={revoking ? opts.owner(revoking) : ''}
        onClose={() => setRevoking(null)}
        onDone={(error) => {
          opts.onRevoked(error);
          opts.reload();
        }}
      />
      {inspecting ? <LimitsStateDialog apiKey={inspecting} onClose={() => setInspecting(null)} /> : null}
      {changing ? (
        <EditKeyDialog
          apiKey={changing}
          tier={opts.tier(changing)}
          onClose={() => setChanging(null)}
          onSaved={() => {
            setChanging(null);
            opts.reload();
          }}
        />
      ) : null}
      {limiting ? (
        <LimitsDialog
          apiKey={limiting}
          onClose={() => setLimiting(null)}
          onSaved={() => {
            setLimiting(null);
            opts.reload();
          }}
        />
      ) : null}
    </>
  );
  return { revoke: setRevoking, inspect: setInspecting, edit: setChanging, limits: setLimiting, dialogs };
}
