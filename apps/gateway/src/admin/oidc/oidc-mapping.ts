import type { OidcErrorCode } from '@infer/contracts';
import type { Operator } from '@infer/persistence/lazy';

/** The claims of a validated ID token that decide who signs in. */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email?: unknown;
  emailVerified?: unknown;
}

export interface OidcPolicy {
  /** Lower-case email domains allowed; empty: any. */
  allowedDomains: readonly string[];
  /** Create an unknown email as a viewer (only with allowedDomains, enforced by the config). */
  autoProvision: boolean;
}

export type OidcDecision =
  /** An existing operator; `link`: first single sign-on, record the identity on the operator. */
  | { kind: 'operator'; operator: Operator; link: boolean; email: string }
  /** No operator with this email: create it as a viewer, linked to the identity. */
  | { kind: 'provision'; email: string }
  | { kind: 'refused'; code: OidcErrorCode };

/** How an identity is stored on its operator (`Operator.oidcSubject`). */
export const identityKey = (id: Pick<OidcIdentity, 'issuer' | 'subject'>) => `${id.issuer} ${id.subject}`;

/** The email of an identity as operators are stored (trimmed, lower case), or null when it has none. */
export function identityEmail(id: OidcIdentity): string | null {
  if (typeof id.email !== 'string') return null;
  const email = id.email.trim().toLowerCase();
  return /^[^\s@]+@[^\s@]+$/.test(email) ? email : null;
}

/**
 * Maps a validated OpenID identity to an operator (ADR 0010): the email must be present and
 * verified by the provider, in an allowed domain when domains are configured; then the operator with
 * that email signs in, unless disabled or already linked to a different identity of the provider.
 * An unknown email is refused, or provisioned as a viewer when the policy says so. `operator` is the
 * operator found by the identity's email (null when none).
 */
export function decideOidcOperator(
  id: OidcIdentity,
  operator: Operator | null,
  policy: OidcPolicy,
): OidcDecision {
  const email = identityEmail(id);
  if (!email) return { kind: 'refused', code: 'email_missing' };
  if (id.emailVerified !== true) return { kind: 'refused', code: 'email_unverified' };
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (policy.allowedDomains.length && !policy.allowedDomains.includes(domain))
    return { kind: 'refused', code: 'domain_not_allowed' };
  if (!operator)
    return policy.autoProvision
      ? { kind: 'provision', email }
      : { kind: 'refused', code: 'unknown_operator' };
  if (operator.disabledAt) return { kind: 'refused', code: 'operator_disabled' };
  const key = identityKey(id);
  if (operator.oidcSubject && operator.oidcSubject !== key)
    return { kind: 'refused', code: 'identity_mismatch' };
  return { kind: 'operator', operator, link: !operator.oidcSubject, email };
}
