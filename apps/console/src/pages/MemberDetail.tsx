import {
  type AdminKey,
  type AdminMember,
  type DailyUsage,
  type KeyLimitsState,
  type MintedKey,
  SetKeyLimitsRequestSchema,
  TIERS,
} from '@infer/contracts';
import { type FormEvent, useState } from 'react';
import { api, query } from '../api.js';
import { ago, utc } from '../format.js';
import { useLoad } from '../hooks.js';
import { Link } from '../router.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { BarChart, Button, Dialog, ErrorNote, Field } from '../ui.js';
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
  const [revoking, setRevoking] = useState<AdminKey | null>(null);
  const [editing, setEditing] = useState<AdminKey | null>(null);
  const [inspecting, setInspecting] = useState<AdminKey | null>(null);
  const [suspending, setSuspending] = useState(false);
  const m = detail.data;

  const patch = async (body: Record<string, unknown>) => {
    setFailure(null);
    try {
      await api('PATCH', `/admin/members/${encodeURIComponent(props.id)}`, body);
      detail.reload();
    } catch (error) {
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
      </dl>
      <div className="row">
        <Field
          label="Tier"
          name="tier"
          value={m.tier}
          options={TIERS}
          onChange={(tier) => (canWrite ? patch({ tier }) : undefined)}
          hint={canWrite ? 'Applies to every key of the member at once.' : READ_ONLY_REASON}
        />
        <Button
          kind={m.suspended ? 'plain' : 'danger'}
          disabled={!canWrite}
          reason={READ_ONLY_REASON}
          onClick={() => (m.suspended ? patch({ suspended: false }) : setSuspending(true))}
        >
          {m.suspended ? 'Unsuspend' : 'Suspend'}
        </Button>
      </div>
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
      <table>
        <caption className="sr-only">API keys</caption>
        <thead>
          <tr>
            <th scope="col">Prefix</th>
            <th scope="col">Name</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Limits</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {m.api_keys.map((k) => (
            <tr key={k.id}>
              <td className="mono">{k.prefix}</td>
              <td>{k.name}</td>
              <td>{utc(k.created_at)}</td>
              <td>{ago(k.last_used_at)}</td>
              <td>{k.limits ? 'key overrides' : 'tier'}</td>
              <td>{k.revoked_at ? `revoked ${utc(k.revoked_at)}` : 'active'}</td>
              <td className="actions">
                <Button onClick={() => setInspecting(k)}>State</Button>
                <Button disabled={!canWrite} reason={READ_ONLY_REASON} onClick={() => setEditing(k)}>
                  Limits
                </Button>
                <Button
                  disabled={!canWrite || Boolean(k.revoked_at)}
                  reason={k.revoked_at ? 'Already revoked.' : READ_ONLY_REASON}
                  onClick={async () => {
                    setFailure(null);
                    try {
                      setMinted(
                        await api<MintedKey>('POST', `/admin/keys/${encodeURIComponent(k.id)}/rotate`),
                      );
                    } catch (error) {
                      setFailure(error);
                    }
                    detail.reload();
                  }}
                >
                  Rotate
                </Button>
                <Button
                  kind="danger"
                  disabled={!canWrite || Boolean(k.revoked_at)}
                  reason={k.revoked_at ? 'Already revoked.' : READ_ONLY_REASON}
                  onClick={() => setRevoking(k)}
                >
                  Revoke
                </Button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {m.api_keys.length === 0 ? <p>No keys yet.</p> : null}

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
        onClose={() => setMinting(false)}
        onMinted={(k) => {
          setMinting(false);
          setMinted(k);
          detail.reload();
        }}
      />
      <Dialog
        open={Boolean(minted)}
        title="Your new API key"
        onClose={() => setMinted(null)}
        dismissable={false}
      >
        <p>
          <strong>This is the only time the key is shown.</strong> Store it now; afterwards only its prefix is
          visible.
        </p>
        <p className="secret mono" data-testid="minted-key">
          {minted?.key}
        </p>
        <div className="actions">
          <Button onClick={() => navigator.clipboard?.writeText(minted?.key ?? '')}>Copy</Button>
          <Button kind="primary" onClick={() => setMinted(null)}>
            I have stored the key
          </Button>
        </div>
      </Dialog>
      <Dialog open={Boolean(revoking)} title="Revoke this key?" onClose={() => setRevoking(null)}>
        <p>
          Key <span className="mono">{revoking?.prefix}</span> ({revoking?.name}) of {m.name} stops working at
          once. This cannot be undone.
        </p>
        <div className="actions">
          <Button onClick={() => setRevoking(null)}>Cancel</Button>
          <Button
            kind="danger"
            onClick={async () => {
              const k = revoking;
              setRevoking(null);
              if (!k) return;
              try {
                await api('POST', `/admin/keys/${encodeURIComponent(k.id)}/revoke`);
              } catch (error) {
                setFailure(error);
              }
              detail.reload();
            }}
          >
            Revoke key
          </Button>
        </div>
      </Dialog>
      <Dialog open={suspending} title="Suspend this member?" onClose={() => setSuspending(false)}>
        <p>
          Every key of {m.name} ({m.api_keys.filter((k) => !k.revoked_at).length} active) is refused with 401
          until the member is unsuspended.
        </p>
        <div className="actions">
          <Button onClick={() => setSuspending(false)}>Cancel</Button>
          <Button
            kind="danger"
            onClick={() => {
              setSuspending(false);
              void patch({ suspended: true });
            }}
          >
            Suspend member
          </Button>
        </div>
      </Dialog>
      {inspecting ? <LimitsState apiKey={inspecting} onClose={() => setInspecting(null)} /> : null}
      {editing ? (
        <LimitsDialog
          apiKey={editing}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            detail.reload();
          }}
        />
      ) : null}
    </section>
  );
}

function MintDialog(props: {
  open: boolean;
  memberId: string;
  onClose: () => void;
  onMinted: (k: MintedKey) => void;
}) {
  const [name, setName] = useState('default');
  const [failure, setFailure] = useState<unknown>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    try {
      props.onMinted(
        await api<MintedKey>('POST', `/admin/members/${encodeURIComponent(props.memberId)}/keys`, { name }),
      );
    } catch (error) {
      setFailure(error);
    }
  };
  return (
    <Dialog open={props.open} title="Mint an API key" onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <Field label="Key name" name="name" value={name} onChange={setName} required />
        <ErrorNote error={failure} />
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

const EXAMPLE = '{"key": {"requests_per_minute": 120}, "models": {"chat-A": {"tokens_per_minute": 3000000}}}';

function LimitsDialog(props: { apiKey: AdminKey; onClose: () => void; onSaved: () => void }) {
  const [text, setText] = useState(props.apiKey.limits ? JSON.stringify(props.apiKey.limits, null, 2) : '');
  const [error, setError] = useState<string | null>(null);
  const save = async (limits: unknown) => {
    const errs = fieldErrors(SetKeyLimitsRequestSchema, { limits });
    const first = Object.entries(errs)[0];
    if (first) {
      setError(`${first[0]}: ${first[1]}`);
      return;
    }
    try {
      await api('PUT', `/admin/keys/${encodeURIComponent(props.apiKey.id)}/limits`, { limits });
      props.onSaved();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <Dialog open title={`Limits of ${props.apiKey.prefix}`} onClose={props.onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            setError('Not valid JSON.');
            return;
          }
          void save(parsed);
        }}
        noValidate
      >
        <label htmlFor="limits-json">
          Overrides (JSON). Empty the field and use “Back to the tier” to clear.
        </label>
        <textarea
          id="limits-json"
          rows={8}
          value={text}
          placeholder={EXAMPLE}
          onChange={(e) => setText(e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? 'limits-error' : undefined}
        />
        {error ? (
          <p id="limits-error" className="error" role="alert">
            {error}
          </p>
        ) : null}
        <div className="actions">
          <Button onClick={props.onClose}>Cancel</Button>
          <Button onClick={() => void save(null)}>Back to the tier</Button>
          <Button type="submit" kind="primary">
            Save
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

/** The live state of every limit of a key, as the gateway computes it (GET /admin/keys/{id}/limits). */
function LimitsState(props: { apiKey: AdminKey; onClose: () => void }) {
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
                {l.used.toLocaleString('en')} / {l.limit.toLocaleString('en')} {l.unit}
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
