import { timingSafeEqual } from 'node:crypto';
import { parseCookie, stringifySetCookie } from 'cookie';

/** Name of the operator console's session cookie. */
export const SESSION_COOKIE = 'infer_console_session';

export function readSessionCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const v = parseCookie(header)[SESSION_COOKIE];
  return v && /^[A-Za-z0-9_-]{20,100}$/.test(v) ? v : undefined;
}

/**
 * The Set-Cookie value of a session: HttpOnly (no script reads it), SameSite=Strict (never sent on
 * a cross-site request), Secure when the request came over HTTPS, Path=/ (the console at /console/
 * and the API at /admin/ share it). No Max-Age: a browser session cookie; the server ends it when idle.
 */
export function sessionCookie(token: string, secure: boolean): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: token,
    httpOnly: true,
    sameSite: 'strict',
    secure,
    path: '/',
  });
}

export function clearedSessionCookie(secure: boolean): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: '',
    httpOnly: true,
    sameSite: 'strict',
    secure,
    path: '/',
    expires: new Date(0),
  });
}

/** Constant-time comparison of two tokens (different lengths compare unequal). */
export function sameToken(a: string | undefined, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
