// Key dialogs shared by the member page and the Keys page: the one-time display of a new key, the
// live limit state of a key, and the revoke confirmation.
import type { KeyLimitsState, MintedKey } from '@infer/contracts';
import { api } from './api.js';
import { utc } from './format.js';
import { useLoad } from './hooks.js';
import { Button, Dialog, ErrorNote } from './ui.js';

/** The new key, shown this once: Escape does not close it, only the explicit button. */
export function OneTimeKeyDialog(props: { minted: MintedKey | null; onClose: () => void }) {
  return (
    <Dialog open={Boolean(props.minted)} title="Your new API key" onClose={props.onClose} dismissable={false}>
      <p>
        <strong>This is the only time the key is shown.</strong> Store it now; afterwards only its prefix is
        visible.
      </p>
      <p className="secret mono" data-testid="minted-key">
        {props.minted?.key}
      </p>
      <div className="actions">
        <Button onClick={() => navigator.clipboard?.writeText(props.minted?.key ?? '')}>Copy</Button>
        <Button kind="primary" onClick={props.onClose}>
          I have stored the key
        </Button>
      </div>
    </Dialog>
  );
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
