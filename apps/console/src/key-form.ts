// The key lifecycle form's model (pure, key-form.spec.ts): its values, the request body they make
// (MintKeyRequest / UpdateKeyRequest) and the problems, per field, in sentences.
import { type AdminKey, canonicalCidr, parseDuration } from '@infer/contracts';

export interface Lifecycle {
  expiry: 'never' | 'in' | 'at';
  expiresIn: string;
  /** `YYYY-MM-DDTHH:MM`, read as UTC. */
  expiresAt: string;
  models: string[];
  ips: string;
}

/** The form's starting values: a new key's, or those of `k`. */
export function lifecycleOf(k?: AdminKey): Lifecycle {
  return {
    expiry: k?.expires_at ? 'at' : 'never',
    expiresIn: '30d',
    expiresAt: k?.expires_at ? new Date(k.expires_at * 1000).toISOString().slice(0, 16) : '',
    models: k?.allowed_models ?? [],
    ips: (k?.allowed_ips ?? []).join('\n'),
  };
}

/**
 * The request fields of a lifecycle (MintKeyRequest / UpdateKeyRequest), or the problems in sentences,
 * per field (`expiry`, `allowed_ips`: one sentence per bad entry).
 */
export function lifecycleBody(
  l: Lifecycle,
  now = Date.now(),
  /** The key's values before the edit: an expiry left as it was is not sent (an expired key's too). */
  before?: Lifecycle,
): { body: Record<string, unknown>; errors: Record<string, string[]> } {
  const errors: Record<string, string[]> = {};
  const body: Record<string, unknown> = {};
  const unchanged =
    before !== undefined &&
    before.expiry === l.expiry &&
    (l.expiry === 'never' || (l.expiry === 'at' && before.expiresAt === l.expiresAt));
  if (unchanged) {
    // nothing to send for the expiry
  } else if (l.expiry === 'never') body.expires_at = null;
  else if (l.expiry === 'in') {
    const ms = parseDuration(l.expiresIn);
    if (ms === null || ms === 0)
      errors.expiry = [`“${l.expiresIn}” is not a duration: give one such as 90m, 24h, 30d or 1w.`];
    else body.expires_in = l.expiresIn.trim();
  } else {
    const at = Date.parse(`${l.expiresAt}:00Z`);
    if (!l.expiresAt || Number.isNaN(at)) errors.expiry = ['Choose the date and time (UTC) the key expires.'];
    else if (at <= now)
      errors.expiry = ['That time has passed: choose one in the future, or revoke the key.'];
    else body.expires_at = new Date(at).toISOString();
  }
  body.allowed_models = l.models;
  const entries = l.ips
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = entries.filter((e) => canonicalCidr(e) === null);
  if (bad.length)
    errors.allowed_ips = bad.map(
      (e) => `“${e}” is not an IP address or CIDR block (such as 203.0.113.7, 10.0.0.0/8 or 2001:db8::/32).`,
    );
  body.allowed_ips = entries;
  return { body, errors };
}

/** The form field a failure's `param` names (`allowed_ips[2]` -> `allowed_ips`). */
export function fieldOfParam(param: string | null): string {
  const top = (param ?? '').split(/[.[]/)[0] ?? '';
  return top === 'expires_at' || top === 'expires_in' ? 'expiry' : top || '_form';
}
