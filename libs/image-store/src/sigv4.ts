import { createHash, createHmac } from 'node:crypto';

/**
 * AWS Signature Version 4 for S3-compatible object stores (AWS S3, MinIO, Ceph RGW, R2, GCS interop
 * ...), header-based, as documented in "Signature Calculations for the Authorization Header".
 * Checked against AWS's published S3 example (see sigv4.spec.ts).
 */
export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials (STS) carry a session token, sent and signed as x-amz-security-token. */
  sessionToken?: string;
}

export interface SigV4Request {
  method: string;
  url: URL;
  /** Headers to sign and send (names in any case). Host, x-amz-date, x-amz-content-sha256 are added. */
  headers?: Record<string, string>;
  /** Hex SHA-256 of the body (`sha256Hex(body)`), or 'UNSIGNED-PAYLOAD'. */
  payloadHash: string;
}

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** RFC 3986 encoding as SigV4 wants it (unreserved characters kept; `/` kept in paths). */
export function awsUriEncode(s: string, keepSlash: boolean): string {
  let out = '';
  for (const ch of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(ch);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += `%${ch.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function amzDate(d: Date): string {
  return d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/**
 * Returns the headers to send: the given ones plus host, x-amz-date, x-amz-content-sha256
 * (x-amz-security-token) and Authorization. `date` is the signing time (real time: servers refuse
 * signatures more than ~15 minutes off).
 */
export function signV4(
  req: SigV4Request,
  creds: SigV4Credentials,
  region: string,
  service: string,
  date: Date = new Date(),
): Record<string, string> {
  const stamp = amzDate(date);
  const day = stamp.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = String(v);
  headers.host = req.url.host;
  headers['x-amz-date'] = stamp;
  headers['x-amz-content-sha256'] = req.payloadHash;
  if (creds.sessionToken) headers['x-amz-security-token'] = creds.sessionToken;

  const names = Object.keys(headers).sort();
  const canonicalHeaders = names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const query = [...req.url.searchParams.entries()]
    .map(([k, v]) => [awsUriEncode(k, false), awsUriEncode(v, false)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  // S3 paths are signed as sent, each segment URI-encoded once.
  const path = awsUriEncode(decodeURIComponent(req.url.pathname), true) || '/';
  const canonicalRequest = [
    req.method.toUpperCase(),
    path,
    query,
    canonicalHeaders,
    signedHeaders,
    req.payloadHash,
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', stamp, scope, sha256Hex(canonicalRequest)].join('\n');
  const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
  const kDate = hmac(`AWS4${creds.secretAccessKey}`, day);
  const kSigning = hmac(hmac(hmac(kDate, region), service), 'aws4_request');
  const signature = createHmac('sha256', kSigning).update(stringToSign).digest('hex');
  const { host: _host, ...toSend } = headers;
  return {
    ...toSend,
    authorization: `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope},SignedHeaders=${signedHeaders},Signature=${signature}`,
  };
}
