// The console's HTTP client: same-origin fetch with the session cookie, the CSRF token on every
// mutation, and the API's error envelope turned into an ApiFailure the forms can show per field.

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null,
    readonly param: string | null,
  ) {
    super(message);
    this.name = 'ApiFailure';
  }
}

let csrfToken = '';
let onSignedOut: (() => void) | undefined;

/** Set from the session (sign-in or GET /admin/session); kept in memory only, never in storage. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Called when the server says the session has ended (401 session_expired). */
export function onSessionEnded(fn: () => void): void {
  onSignedOut = fn;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = (data as { error?: { message?: string; code?: string; param?: string } } | null)?.error;
    const failure = new ApiFailure(
      res.status,
      err?.message ?? `The server answered ${res.status}.`,
      err?.code ?? null,
      err?.param ?? null,
    );
    if (res.status === 401 && failure.code === 'session_expired' && !path.endsWith('/admin/session'))
      onSignedOut?.();
    throw failure;
  }
  return data as T;
}

/** A query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
