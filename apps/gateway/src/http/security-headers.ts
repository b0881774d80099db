/** One year, as browsers' preload lists expect. */
export const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * Headers every answer carries: `X-Content-Type-Options: nosniff` (error bodies and JSON are never
 * sniffed into something else), and over HTTPS `Strict-Transport-Security`, so that a browser never
 * tries the refused plain-HTTP address again. Set in the onRequest hook, before any route runs;
 * streams copy them into their hijacked head.
 */
export function securityHeaders(protocol: string): Record<string, string> {
  const h: Record<string, string> = { 'x-content-type-options': 'nosniff' };
  if (protocol === 'https') h['strict-transport-security'] = HSTS;
  return h;
}
