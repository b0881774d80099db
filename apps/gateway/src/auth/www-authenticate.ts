import { ApiError } from '@infer/contracts';

/** The protection space of the API keys in WWW-Authenticate challenges. */
export const REALM = 'infer-platform';

/** RFC 6750 error codes: a malformed Authorization header, an unknown or revoked key. */
export type BearerError = 'invalid_request' | 'invalid_token';

/** A quoted-string for an auth-param: quotes and backslashes escaped, control characters dropped. */
const quoted = (s: string) =>
  `"${[...s]
    .filter((c) => c >= ' ' && c !== '\u007f')
    .join('')
    .replace(/["\\]/g, (c) => `\\${c}`)}"`;

/**
 * `WWW-Authenticate: Bearer realm="infer-platform"[, error="..."], error_description="..."` (RFC 6750
 * section 3). A request without credentials gets no `error` code (section 3.1); a malformed header
 * `invalid_request`, an unknown key `invalid_token`. The challenge says the scheme is a plain bearer
 * key, so OAuth-first clients (MCP Inspector without a header) know to ask for the key instead of
 * starting an OAuth flow that cannot succeed.
 */
export function bearerChallenge(description: string, error?: BearerError): string {
  const params = [`realm=${quoted(REALM)}`];
  if (error) params.push(`error=${quoted(error)}`);
  params.push(`error_description=${quoted(description)}`);
  return `Bearer ${params.join(', ')}`;
}

/** The spec's 401 invalid_api_key, with the challenge. */
export function unauthorized(message: string, description: string, error?: BearerError): ApiError {
  const e = ApiError.invalidKey(message);
  return new ApiError(e.status, e.message, {
    type: e.type,
    code: e.code,
    param: e.param,
    headers: { 'www-authenticate': bearerChallenge(description, error) },
  });
}
