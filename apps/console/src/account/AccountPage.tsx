// The member's account page: tier and what it reaches, their API keys (create, rotate, revoke), the
// usage and limits of the current period (the same numbers as GET /v1/usage) and "use it" snippets.
import {
  type AccountKey,
  type AccountKeyList,
  type AccountMintedKey,
  type AccountSessionView,
  CreateAccountKeyRequestSchema,
  type SelfUsage,
} from '@infer/contracts';
import { type FormEvent, useState } from 'react';
import { api } from '../api.js';
import { ago, compactNumber, utc } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { BarChart, Button, Dialog, ErrorNote, Field } from '../ui.js';
import { type FieldErrors, fieldErrors } from '../validate.js';
import { snippets } from './snippets.js';

const EXPIRIES: Record<string, string | undefined> = {
  Never: undefined,
  '30 days': '30d',
  '90 days': '90d',
  '1 year': '365d',
};
const GRACES: Record<string, string> = {
  '24 hours (default)': '24h',
  '1 hour': '1h',
  '7 days': '7d',
  'None: the old secret stops now': '0',
};

export function AccountPage(props: { session: AccountSessionView; onSignedOut: () => void }) {
  const m = props.session.member;
  const keys = useLoad(() => api<AccountKeyList>('GET', '/account/api/keys'), 'keys');
  const usage = useLoad(() => api<SelfUsage>('GET', '/account/api/usage'), 'usage', 30_000);
  return (
    <div className="account">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header>
        <span className="brand">Your account</span>
        <span className="who">
          {m.email} <span className="badge">{m.tier}</span>
        </span>
        <Button onClick={props.onSignedOut}>Sign out</Button>
      </header>
      <main id="main">
        <h1>{m.name}</h1>
        <TierSection session={props.session} />
        <KeysSection list={keys.data} error={keys.error} reload={keys.reload} />
        <UsageSection usage={usage.data} error={usage.error} />
        <UseIt session={props.session} />
      </main>
    </div>
  );
}

function TierSection(props: { session: AccountSessionView }) {
  const m = props.session.member;
  return (
    <section aria-labelledby="tier-h">
      <h2 id="tier-h">Your tier: {m.tier}</h2>
      <p>Your keys reach these models, through these endpoints:</p>
      <table className="cards">
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Kind</th>
            <th scope="col">Endpoints</th>
          </tr>
        </thead>
        <tbody>
          {m.models.map((model) => (
            <tr key={model.id}>
              <td className="mono" data-label="Model">
                {model.id}
              </td>
              <td data-label="Kind">{model.kind}</td>
              <td data-label="Endpoints">
                <span className="endpoint-list">
                  {model.endpoints.map((e) => (
                    <span key={e} className="mono">
                      {e}
                    </span>
                  ))}
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function keyStatus(k: AccountKey, now: number): string {
  if (k.revoked_at) return `revoked ${utc(k.revoked_at)}`;
  if (k.expires_at && k.expires_at * 1000 <= now) return `expired ${utc(k.expires_at)}`;
  if (k.old_secret_valid_until) return `active; old secret valid until ${utc(k.old_secret_valid_until)}`;
  return 'active';
}

function KeysSection(props: { list: AccountKeyList | undefined; error: unknown; reload: () => void }) {
  const now = useNow(30_000);
  const [creating, setCreating] = useState(false);
  const [minted, setMinted] = useState<AccountMintedKey | null>(null);
  const [rotating, setRotating] = useState<AccountKey | null>(null);
  const [revoking, setRevoking] = useState<AccountKey | null>(null);
  const [failure, setFailure] = useState<unknown>(null);
  const list = props.list;
  const full = list ? list.live >= list.max_live : true;
  return (
    <section aria-labelledby="keys-h">
      <h2 id="keys-h">API keys</h2>
      <p>
        {list ? `${list.live} of ${list.max_live} live keys.` : null} A key is personal: keep it secret and
        revoke it when it may have leaked.
      </p>
      <div className="actions">
        <Button
          kind="primary"
          disabled={full}
          reason={full ? 'You have the most live keys allowed: revoke one first.' : undefined}
          onClick={() => setCreating(true)}
        >
          Create a key
        </Button>
      </div>
      <ErrorNote error={props.error ?? failure} />
      {list && list.data.length === 0 ? <p>No keys yet.</p> : null}
      {list && list.data.length > 0 ? (
        <table className="cards">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Expires</th>
              <th scope="col">Models</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((k) => {
              const live = !k.revoked_at && !(k.expires_at && k.expires_at * 1000 <= now);
              return (
                <tr key={k.id}>
                  <td data-label="Name">{k.name}</td>
                  <td className="mono" data-label="Prefix">
                    {k.prefix}
                  </td>
                  <td data-label="Created">{utc(k.created_at)}</td>
                  <td data-label="Last used">{ago(k.last_used_at, now)}</td>
                  <td data-label="Expires">{k.expires_at ? utc(k.expires_at) : 'never'}</td>
                  <td data-label="Models">
                    {k.allowed_models.length ? k.allowed_models.join(', ') : 'all of your tier'}
                  </td>
                  <td data-label="Status">{keyStatus(k, now)}</td>
                  <td data-label="Actions">
                    {live ? (
                      <span className="actions">
                        <Button label={`Rotate ${k.name}`} onClick={() => setRotating(k)}>
                          Rotate
                        </Button>
                        <Button kind="danger" label={`Revoke ${k.name}`} onClick={() => setRevoking(k)}>
                          Revoke
                        </Button>
                      </span>
                    ) : (
                      '-'
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      <CreateKeyDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(k) => {
          setCreating(false);
          setMinted(k);
          props.reload();
        }}
      />
      <RotateKeyDialog
        apiKey={rotating}
        onClose={() => setRotating(null)}
        onRotated={(k) => {
          setRotating(null);
          setMinted(k);
          props.reload();
        }}
      />
      <Dialog open={Boolean(revoking)} title="Revoke this key?" onClose={() => setRevoking(null)}>
        <p>
          Key <span className="mono">{revoking?.prefix}</span> ({revoking?.name}) stops working at once, on
          every gateway. This cannot be undone.
        </p>
        <div className="actions">
          <Button onClick={() => setRevoking(null)}>Cancel</Button>
          <Button
            kind="danger"
            onClick={async () => {
              const k = revoking;
              setRevoking(null);
              if (!k) return;
              setFailure(null);
              try {
                await api('POST', `/account/api/keys/${encodeURIComponent(k.id)}/revoke`);
              } catch (error) {
                setFailure(error);
              }
              props.reload();
            }}
          >
            Revoke key
          </Button>
        </div>
      </Dialog>
      <SecretDialog minted={minted} onClose={() => setMinted(null)} />
    </section>
  );
}

function CreateKeyDialog(props: {
  open: boolean;
  onClose: () => void;
  onCreated: (k: AccountMintedKey) => void;
}) {
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState('Never');
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { name, ...(EXPIRIES[expiry] ? { expires_in: EXPIRIES[expiry] } : {}) };
    const errs = fieldErrors(CreateAccountKeyRequestSchema, body);
    setErrors(errs);
    setFailure(null);
    if (Object.keys(errs).length) return;
    setBusy(true);
    try {
      const k = await api<AccountMintedKey>('POST', '/account/api/keys', body);
      setName('');
      setExpiry('Never');
      props.onCreated(k);
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open={props.open} title="Create a key" onClose={props.onClose}>
      <form onSubmit={submit} noValidate aria-label="Create a key">
        <Field
          label="Name"
          name="name"
          value={name}
          onChange={setName}
          error={errors.name}
          hint="What the key is for, e.g. laptop or CI."
          required
        />
        <Field
          label="Expires"
          name="expires"
          value={expiry}
          onChange={setExpiry}
          options={Object.keys(EXPIRIES)}
        />
        <ErrorNote error={failure} />
        <div className="actions">
          <Button onClick={props.onClose}>Cancel</Button>
          <Button type="submit" kind="primary" disabled={busy}>
            Create key
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

function RotateKeyDialog(props: {
  apiKey: AccountKey | null;
  onClose: () => void;
  onRotated: (k: AccountMintedKey) => void;
}) {
  const [grace, setGrace] = useState(Object.keys(GRACES)[0] ?? '');
  const [failure, setFailure] = useState<unknown>(null);
  const k = props.apiKey;
  return (
    <Dialog open={Boolean(k)} title="Rotate this key?" onClose={props.onClose}>
      <p>
        Key <span className="mono">{k?.prefix}</span> ({k?.name}) gets a new secret, shown once. The old
        secret keeps working for the grace period, so you can deploy the new one first.
      </p>
      <Field
        label="Old secret keeps working"
        name="grace"
        value={grace}
        onChange={setGrace}
        options={Object.keys(GRACES)}
      />
      <ErrorNote error={failure} />
      <div className="actions">
        <Button onClick={props.onClose}>Cancel</Button>
        <Button
          kind="primary"
          onClick={async () => {
            if (!k) return;
            setFailure(null);
            try {
              props.onRotated(
                await api<AccountMintedKey>('POST', `/account/api/keys/${encodeURIComponent(k.id)}/rotate`, {
                  grace: GRACES[grace] ?? '24h',
                }),
              );
            } catch (error) {
              setFailure(error);
            }
          }}
        >
          Rotate key
        </Button>
      </div>
    </Dialog>
  );
}

/** The new secret, shown this once: Escape and the backdrop do not close it, only the explicit button. */
function SecretDialog(props: { minted: AccountMintedKey | null; onClose: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <Dialog
      open={Boolean(props.minted)}
      title="Your new API key"
      onClose={() => {
        setCopied(false);
        props.onClose();
      }}
      dismissable={false}
    >
      <p>
        <strong>This is the only time the key is shown.</strong> Store it now (for example as{' '}
        <span className="mono">INFER_API_KEY</span>); afterwards only its prefix is visible.
      </p>
      <p className="secret mono" data-testid="minted-key">
        {props.minted?.key}
      </p>
      <p role="status">{copied ? 'Copied to the clipboard.' : ''}</p>
      <div className="actions">
        <Button
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(props.minted?.key ?? '');
              setCopied(true);
            } catch {
              setCopied(false);
            }
          }}
        >
          Copy
        </Button>
        <Button
          kind="primary"
          onClick={() => {
            setCopied(false);
            props.onClose();
          }}
        >
          I have stored the key
        </Button>
      </div>
    </Dialog>
  );
}

function UsageSection(props: { usage: SelfUsage | undefined; error: unknown }) {
  const u = props.usage;
  const byModel = new Map<string, number>();
  for (const d of u?.daily ?? []) byModel.set(d.model, (byModel.get(d.model) ?? 0) + d.total_tokens);
  return (
    <section aria-labelledby="usage-h">
      <h2 id="usage-h">Usage this period</h2>
      <ErrorNote error={props.error} />
      {u ? (
        <>
          <p>
            Period {utc(u.period.start)} to {utc(u.period.end)}:{' '}
            {u.member.usage.requests.toLocaleString('en')} requests,{' '}
            {u.member.usage.total_tokens.toLocaleString('en')} tokens, ${u.member.usage.cost} (all your keys).
          </p>
          <h3>Limits and allowances</h3>
          {u.limits.length === 0 ? (
            <p>No limits apply to your account right now.</p>
          ) : (
            <table className="cards">
              <thead>
                <tr>
                  <th scope="col">Limit</th>
                  <th scope="col">Used</th>
                  <th scope="col">Remaining</th>
                  <th scope="col">Resets</th>
                </tr>
              </thead>
              <tbody>
                {u.limits.map((l) => (
                  <tr key={l.name}>
                    <td data-label="Limit">
                      <span className="mono">{l.name}</span>
                    </td>
                    <td data-label="Used">
                      {compactNumber(l.used)} of {compactNumber(l.limit)} {l.unit}
                    </td>
                    <td data-label="Remaining">
                      {compactNumber(l.remaining)}
                      {l.remaining <= 0 ? <span className="badge danger">used up</span> : null}
                    </td>
                    <td data-label="Resets">{l.resets_at ? utc(l.resets_at) : '-'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <BarChart
            title="Tokens by model this period"
            unit="Tokens"
            bars={[...byModel].map(([label, value]) => ({ label, value }))}
          />
          <h3>By day and model</h3>
          {u.daily.length === 0 ? (
            <p>No usage yet this period.</p>
          ) : (
            <table className="cards">
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Model</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Cost (USD)</th>
                </tr>
              </thead>
              <tbody>
                {u.daily.map((d) => (
                  <tr key={`${d.day} ${d.model}`}>
                    <td data-label="Day">{d.day}</td>
                    <td className="mono" data-label="Model">
                      {d.model}
                    </td>
                    <td data-label="Requests">{d.requests.toLocaleString('en')}</td>
                    <td data-label="Tokens">{d.total_tokens.toLocaleString('en')}</td>
                    <td data-label="Cost (USD)">${d.cost}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      ) : null}
    </section>
  );
}

function UseIt(props: { session: AccountSessionView }) {
  const chat = props.session.member.models.find((m) => m.kind === 'chat')?.id;
  const all = snippets(props.session.api_base_url, chat);
  const [shown, setShown] = useState(all[0]?.id ?? '');
  const current = all.find((s) => s.id === shown) ?? all[0];
  return (
    <section aria-labelledby="use-h">
      <h2 id="use-h">Use it</h2>
      <p>
        Base URL: <span className="mono">{props.session.api_base_url}</span>. Put your key in{' '}
        <span className="mono">INFER_API_KEY</span>.
      </p>
      <fieldset className="tabs">
        <legend className="sr-only">Client</legend>
        {all.map((s) => (
          <button
            key={s.id}
            type="button"
            className={`btn ${s.id === current?.id ? 'primary' : 'plain'}`}
            aria-pressed={s.id === current?.id}
            onClick={() => setShown(s.id)}
          >
            {s.title}
          </button>
        ))}
      </fieldset>
      {current ? (
        <figure className="snippet">
          <figcaption>{current.note}</figcaption>
          <pre className="mono">{current.code}</pre>
        </figure>
      ) : null}
    </section>
  );
}
