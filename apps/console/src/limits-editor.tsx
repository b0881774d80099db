// The limit editor of a key (a form, not JSON): per limit "inherited from tier" (with the tier's
// value), an own value or "unlimited", its window and when it resets (from the key's live state).
// Problems, the form's own and the server's (by `param`), are sentences beside their field.
import { type KeyLimitsState, type LimitState, SetKeyLimitsRequestSchema } from '@infer/contracts';
import { type FormEvent, Fragment, useMemo, useState } from 'react';
import { ApiFailure, api } from './api.js';
import { utc } from './format.js';
import { useLoad } from './hooks.js';
import { WINDOW } from './limits-explain.js';
import {
  buildOverrides,
  initialRow,
  type LimitRowDef,
  limitRows,
  type Mode,
  paramOf,
  type RowValue,
  tierText,
} from './limits-form.js';
import { Button, Dialog, ErrorNote } from './ui.js';
import { fieldErrors } from './validate.js';

const NEXT_RESET: Record<string, string> = {
  minute: 'each minute',
  day: 'at 00:00 UTC',
  month: 'on the 1st, 00:00 UTC',
  billing_period: 'at the next billing anchor',
  concurrent: 'when a request ends',
  rolling: 'as old use drops out',
};

function resets(def: LimitRowDef, state: LimitState | undefined): string {
  if (state?.resets_at && def.window !== 'minute' && def.window !== 'concurrent') return utc(state.resets_at);
  return NEXT_RESET[def.window] ?? '-';
}

/** Loads the key's limits (its overrides, its tier's values, the live state) and edits them. */
export function LimitsDialog(props: {
  apiKey: { id: string; prefix: string };
  onClose: () => void;
  onSaved: () => void;
}) {
  const state = useLoad(
    () => api<KeyLimitsState>('GET', `/admin/keys/${encodeURIComponent(props.apiKey.id)}/limits`),
    props.apiKey.id,
  );
  return (
    <Dialog open wide title={`Limits of ${props.apiKey.prefix}`} onClose={props.onClose}>
      <ErrorNote error={state.error} />
      {state.data ? (
        <LimitsForm state={state.data} onClose={props.onClose} onSaved={props.onSaved} />
      ) : state.error ? null : (
        <p className="loading">Loading…</p>
      )}
    </Dialog>
  );
}

function LimitsForm(props: { state: KeyLimitsState; onClose: () => void; onSaved: () => void }) {
  const s = props.state;
  const live = useMemo(() => new Map(s.limits.map((l) => [l.name, l])), [s.limits]);
  const defs = useMemo(
    () =>
      limitRows(s.tier_limits, (model) => live.get(`models.${model}.allowance_tokens`)?.window ?? 'month'),
    [s.tier_limits, live],
  );
  const [rows, setRows] = useState<Record<string, RowValue>>(() =>
    Object.fromEntries(defs.map((d) => [paramOf(d), initialRow(s.overrides, d.path)])),
  );
  const models = useMemo(() => Object.keys(s.tier_limits.models ?? {}).sort(), [s.tier_limits]);
  // One model's limits at a time (the rest keep their values): chosen above the table.
  const [model, setModel] = useState(models[0] ?? '');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (key: string, patch: Partial<RowValue>) =>
    setRows((r) => ({ ...r, [key]: { ...(r[key] as RowValue), ...patch } }));

  const save = async (limits: unknown) => {
    setFailure(null);
    const errs = fieldErrors(SetKeyLimitsRequestSchema, { limits });
    if (Object.keys(errs).length) {
      setErrors(errs);
      return;
    }
    setBusy(true);
    try {
      await api('PUT', `/admin/keys/${encodeURIComponent(s.key.id)}/limits`, { limits });
      props.onSaved();
    } catch (e) {
      // The server's problem beside its field when it names one of ours, else above the buttons.
      if (e instanceof ApiFailure && e.param && e.param in rows) setErrors({ [e.param]: e.message });
      else setFailure(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  const submit = (ev: FormEvent) => {
    ev.preventDefault();
    const built = buildOverrides(
      s.overrides,
      defs.map((def) => ({ def, row: rows[paramOf(def)] as RowValue })),
    );
    setErrors(built.errors);
    // A problem in another model's rows: show that model.
    const first = defs.find((d) => built.errors[paramOf(d)]);
    if (first?.path[0] === 'models') setModel(first.path[1] as string);
    if (Object.keys(built.errors).length) return;
    void save(built.limits);
  };

  let group = '';
  return (
    <form onSubmit={submit} noValidate aria-label={`Limits of ${s.key.prefix}`}>
      <p>
        Tier <strong>{s.key.tier}</strong>. A limit “inherited from tier” follows the tier when it changes; an
        own value or “unlimited” holds for this key only.
        {s.enabled ? '' : ' Limits are off on this gateway: nothing is enforced.'}
      </p>
      {models.length ? (
        <div className="field">
          <label htmlFor="limits-model">Per-model limits of</label>
          <select id="limits-model" value={model} onChange={(e) => setModel(e.target.value)}>
            {models.map((id) => (
              <option key={id} value={id}>
                {defs.some((d) => d.path[1] === id && rows[paramOf(d)]?.mode !== 'inherit')
                  ? `${id} (own limits)`
                  : id}
              </option>
            ))}
          </select>
          <small>The models the tier reaches; the table below shows the chosen one.</small>
        </div>
      ) : null}
      <table className="cards limits-form">
        <caption className="sr-only">Limits of key {s.key.prefix}</caption>
        <thead>
          <tr>
            <th scope="col">Limit</th>
            <th scope="col">Setting</th>
            <th scope="col">Value</th>
            <th scope="col">Window</th>
            <th scope="col">Resets</th>
          </tr>
        </thead>
        <tbody>
          {defs
            .filter((def) => def.path[0] !== 'models' || def.path[1] === model)
            .map((def) => {
              const key = paramOf(def);
              const row = rows[key] as RowValue;
              const heading = def.group !== group;
              group = def.group;
              const id = `lim-${def.path.join('-')}`;
              const err = errors[key];
              return (
                <Fragment key={key}>
                  {heading ? (
                    <tr>
                      <th scope="rowgroup" colSpan={5}>
                        {def.group}
                      </th>
                    </tr>
                  ) : null}
                  <tr>
                    <td data-label="Limit">
                      <label htmlFor={`${id}-mode`}>{def.label}</label>
                    </td>
                    <td data-label="Setting">
                      <select
                        id={`${id}-mode`}
                        name={`${key}.mode`}
                        value={row.mode}
                        onChange={(e) => set(key, { mode: e.target.value as Mode })}
                      >
                        <option value="inherit">{`inherited from tier (${tierText(s.tier_limits, def)})`}</option>
                        <option value="value">own value</option>
                        <option value="unlimited">unlimited</option>
                      </select>
                    </td>
                    <td data-label="Value">
                      <span className="field-cell">
                        {row.mode === 'value' ? (
                          <input
                            id={`${id}-value`}
                            name={key}
                            inputMode={def.unit === 'usd' ? 'decimal' : 'numeric'}
                            aria-label={`${def.label}${def.group === 'Key' ? '' : ` (${def.group})`}`}
                            value={row.value}
                            onChange={(e) => set(key, { value: e.target.value })}
                            aria-invalid={err ? true : undefined}
                            aria-describedby={err ? `${id}-err` : undefined}
                            size={12}
                          />
                        ) : (
                          <span className="muted">
                            {row.mode === 'unlimited' ? 'no limit' : tierText(s.tier_limits, def)}
                          </span>
                        )}
                        {err ? (
                          <small id={`${id}-err`} className="error block" role="alert">
                            {err}
                          </small>
                        ) : null}
                      </span>
                    </td>
                    <td data-label="Window">{WINDOW[def.window] ?? def.window}</td>
                    <td data-label="Resets">{resets(def, live.get(def.state))}</td>
                  </tr>
                </Fragment>
              );
            })}
        </tbody>
      </table>
      {errors._form || errors.limits ? (
        <p className="error" role="alert">
          {errors._form ?? errors.limits}
        </p>
      ) : null}
      {failure ? (
        <p className="error" role="alert">
          {failure}
        </p>
      ) : null}
      <div className="actions">
        <Button onClick={props.onClose}>Cancel</Button>
        <Button onClick={() => void save(null)} disabled={busy || !s.overrides}>
          Everything from the tier
        </Button>
        <Button type="submit" kind="primary" disabled={busy}>
          {busy ? 'Saving…' : 'Save limits'}
        </Button>
      </div>
    </form>
  );
}
