import { ApiError, ErrorType } from '@infer/contracts';
import type { AuditActor, SessionWithMember } from '@infer/persistence/lazy';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyRequest } from 'fastify';

/**
 * Who may use the account pages' API (/account/api/...): a member's session, and nothing else. Its
 * cookie is not the operator console's (another name, Path=/account, its own table): an operator's
 * session is never a member's, a member's never opens /admin (whose guard reads only its own cookie
 * and the admin token), and an API key opens neither.
 */
export const ACCOUNT_COOKIE = 'infer_account_session';
const COOKIE_PATH = '/account';

export function readAccountCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const v = parseCookie(header)[ACCOUNT_COOKIE];
  return v && /^[A-Za-z0-9_-]{20,100}$/.test(v) ? v : undefined;
}

/** HttpOnly, SameSite=Strict, Secure over HTTPS, sent to /account only; a browser-session cookie. */
export function accountCookie(token: string, secure: boolean): string {
  return stringifySetCookie({
    name: ACCOUNT_COOKIE,
    value: token,
    httpOnly: true,
    sameSite: 'strict',
    secure,
    path: COOKIE_PATH,
  });
}

export function clearedAccountCookie(secure: boolean): string {
  return stringifySetCookie({
    name: ACCOUNT_COOKIE,
    value: '',
    httpOnly: true,
    sameSite: 'strict',
    secure,
    path: COOKIE_PATH,
    expires: new Date(0),
  });
}

/** True when the request's Origin (if the browser sent one) is the gateway itself. */
export function sameOrigin(req: FastifyRequest): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.host;
  } catch {
    return false;
  }
}

export const csrfFailed = () =>
  new ApiError(403, 'Missing or wrong X-CSRF-Token: reload the page and try again.', {
    type: ErrorType.permission,
    code: 'csrf_failed',
  });

export const signedOut = () =>
  new ApiError(401, 'Not signed in, or your session has ended. Sign in again.', {
    type: ErrorType.auth,
    code: 'session_expired',
  });

/** The member behind a request, for the handlers and the audit log. */
export interface MemberActor extends AuditActor {
  type: 'member';
  id: string;
  session: SessionWithMember;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in member, set by AccountGuard before an account handler runs. */
    memberActor?: import('./account-access.js').MemberActor;
  }
}
