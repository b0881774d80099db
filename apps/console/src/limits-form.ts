// The limit editor's model (pure, limits-form.spec.ts): one row per limit a key may override, each
// "inherited from tier", an own value or "unlimited", turned into the LimitsOverride the admin API
// takes (PUT /admin/keys/{id}/limits). Parts of the overrides the form does not show (a rolling token
// budget, models the tier no longer reaches) are kept as they are.
import { type LimitsOverride, parseMoney } from '@infer/contracts';

export type Mode = 'inherit' | 'value' | 'unlimited';

export interface LimitRowDef {
  /** Where the value sits in a LimitsOverride: `['key', 'requests_per_minute']`, `['models', 'chat-A', 'tokens_per_minute']`. */
  path: string[];
  label: string;
  /** `usd`: dollars as a decimal string; `count`: a whole number. */
  unit: 'count' | 'usd';
  /** The window's id (LimitWindow) for its sentence. */
  window: string;
  /** The live state's name of this limit (GET /admin/keys/{id}/limits). */
  state: string;
  /** A heading the row sits under (`Key`, `Model chat-A` ...). */
  group: string;
}

export interface RowValue {
  mode: Mode;
  value: string;
}

const FIELD_LABEL: Record<string, string> = {
  requests_per_minute: 'Requests per minute',
  tokens_per_minute: 'Tokens per minute',
  concurrent: 'Concurrent requests',
  requests_per_day: 'Searches per day',
  requests_per_month: 'Images per month',
  allowance_tokens: 'Token allowance',
  key_per_month: 'Monthly budget of the key (USD)',
};
const WINDOW_OF: Record<string, string> = {
  requests_per_minute: 'minute',
  tokens_per_minute: 'minute',
  concurrent: 'concurrent',
  requests_per_day: 'day',
  requests_per_month: 'month',
  key_per_month: 'month',
};

/** The rows of the form for a key whose tier gives `tier` (KeyLimitsState.tier_limits). */
export function limitRows(
  tier: LimitsOverride,
  allowanceWindow: (model: string) => string = () => 'month',
): LimitRowDef[] {
  const row = (group: string, path: string[], state = path.join('.')): LimitRowDef => {
    const field = path.at(-1) as string;
    const label =
      path[0] === 'search' && field === 'requests_per_minute'
        ? 'Searches per minute'
        : (FIELD_LABEL[field] ?? field);
    return {
      path,
      label,
      unit: path[0] === 'budget' ? 'usd' : 'count',
      window:
        field === 'allowance_tokens' ? allowanceWindow(path[1] as string) : (WINDOW_OF[field] ?? 'month'),
      state,
      group,
    };
  };
  const rows: LimitRowDef[] = [
    row('Key', ['key', 'requests_per_minute']),
    row('Key', ['key', 'concurrent']),
    row('Key', ['budget', 'key_per_month'], 'key.budget_per_month'),
    row('Web search', ['search', 'requests_per_minute']),
    row('Web search', ['search', 'concurrent']),
    row('Web search', ['search', 'requests_per_day']),
    row('Images', ['images', 'requests_per_minute']),
    row('Images', ['images', 'requests_per_month']),
  ];
  for (const model of Object.keys(tier.models ?? {}).sort()) {
    for (const f of ['requests_per_minute', 'tokens_per_minute', 'concurrent', 'allowance_tokens'])
      rows.push(row(`Model ${model}`, ['models', model, f]));
  }
  return rows;
}

/** The value at `path` (undefined: absent). */
export function valueAt(o: unknown, path: string[]): unknown {
  let v: unknown = o;
  for (const p of path) {
    if (!v || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

/** A row's starting state from the key's overrides. */
export function initialRow(overrides: LimitsOverride | null, path: string[]): RowValue {
  const v = valueAt(overrides, path);
  if (v === undefined) return { mode: 'inherit', value: '' };
  if (v === null) return { mode: 'unlimited', value: '' };
  return { mode: 'value', value: String(v) };
}

/** What the tier gives for a row, in words (`60`, `$25`, `unlimited`, `the key's own limit`). */
export function tierText(tier: LimitsOverride, def: LimitRowDef): string {
  const v = valueAt(tier, def.path);
  if (v === undefined && def.path[0] === 'models' && def.path[2] === 'requests_per_minute')
    return 'the key-wide limit';
  if (v === undefined || v === null) return 'unlimited';
  if (def.unit === 'usd') return `$${String(v)}`;
  return typeof v === 'number' ? v.toLocaleString('en') : String(v);
}

/** The problem of an own value, as a sentence; null when it is fine. */
export function valueProblem(def: LimitRowDef, value: string): string | null {
  const v = value.trim();
  if (def.unit === 'usd') {
    return parseMoney(v) === null
      ? `${def.label} must be an amount of dollars such as 25 or 12.50 (at most 9 decimals).`
      : null;
  }
  return /^\d{1,15}$/.test(v) ? null : `${def.label} must be a whole number, 0 or more.`;
}

/** The param the API names for a row (`limits.key.requests_per_minute`). */
export const paramOf = (def: LimitRowDef) => `limits.${def.path.join('.')}`;

/**
 * The overrides to store: `existing` with every row applied (inherit: removed; unlimited: null; a
 * value: the number, or the dollar string), empty sections dropped; null when nothing is left. Errors
 * are keyed by paramOf.
 */
export function buildOverrides(
  existing: LimitsOverride | null,
  rows: Array<{ def: LimitRowDef; row: RowValue }>,
): { limits: LimitsOverride | null; errors: Record<string, string> } {
  const out = structuredClone(existing ?? {}) as Record<string, unknown>;
  const errors: Record<string, string> = {};
  for (const { def, row } of rows) {
    const parentPath = def.path.slice(0, -1);
    const field = def.path.at(-1) as string;
    let parent = out;
    for (const p of parentPath) {
      if (!parent[p] || typeof parent[p] !== 'object') parent[p] = {};
      parent = parent[p] as Record<string, unknown>;
    }
    if (row.mode === 'inherit') delete parent[field];
    else if (row.mode === 'unlimited') parent[field] = null;
    else {
      const problem = valueProblem(def, row.value);
      if (problem) errors[paramOf(def)] = problem;
      else parent[field] = def.unit === 'usd' ? row.value.trim() : Number(row.value.trim());
    }
  }
  // Drop what became empty: a model without fields, then a section without entries.
  const models = out.models as Record<string, Record<string, unknown>> | undefined;
  if (models) for (const [id, m] of Object.entries(models)) if (!Object.keys(m).length) delete models[id];
  for (const [k, v] of Object.entries(out))
    if (v && typeof v === 'object' && !Object.keys(v).length) delete out[k];
  return { limits: Object.keys(out).length ? (out as LimitsOverride) : null, errors };
}
