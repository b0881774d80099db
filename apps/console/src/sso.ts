import type { OidcErrorCode } from '@infer/contracts';

/** What the sign-in page says when single sign-on came back with `?sso_error=<code>`. */
export const SSO_MESSAGES: Record<OidcErrorCode, string> = {
  not_configured: 'Single sign-on is not configured on this gateway.',
  provider_unavailable: 'The sign-on provider could not be reached. Try again in a moment.',
  provider_error: 'The sign-on provider did not sign you in.',
  state_mismatch: 'That sign-in attempt expired or was started elsewhere. Start again.',
  invalid_response: 'The sign-on provider sent an answer that could not be verified.',
  email_missing: 'The sign-on provider did not share your email address.',
  email_unverified: 'Your email address is not verified at the sign-on provider.',
  domain_not_allowed: 'Accounts of your email domain cannot sign in here.',
  unknown_operator: 'There is no operator account for your email. Ask an owner to create one.',
  operator_disabled: 'Your operator account is disabled.',
  identity_mismatch: 'This account is linked to another sign-on identity.',
  unknown_member: 'No member account has your verified email. Ask an operator to invite you.',
  member_suspended: 'Your membership is suspended: you cannot sign in, and your API keys are refused.',
};

/** The message for an `sso_error` query value; unknown values get a generic one (never echoed). */
export function ssoMessage(code: string | null): string | null {
  if (!code) return null;
  return Object.hasOwn(SSO_MESSAGES, code)
    ? SSO_MESSAGES[code as OidcErrorCode]
    : 'Single sign-on did not complete. Try again.';
}
