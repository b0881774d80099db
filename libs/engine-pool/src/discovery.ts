import { promises as dns } from 'node:dns';

/** Resolves a DNS name to its addresses (A and AAAA). Injected in tests. */
export type Resolver = (host: string) => Promise<string[]>;

/**
 * The A and AAAA records of `host` (a Kubernetes headless Service answers with one record per ready
 * pod). Either family may be missing; both missing is an error (the caller keeps its last list).
 * Sorted, so two lookups that return the same set compare equal.
 */
export const resolveAddresses: Resolver = async (host) => {
  const [v4, v6] = await Promise.allSettled([dns.resolve4(host), dns.resolve6(host)]);
  const out: string[] = [];
  if (v4.status === 'fulfilled') out.push(...v4.value);
  if (v6.status === 'fulfilled') out.push(...v6.value);
  if (!out.length) {
    const notFound = (r: PromiseSettledResult<string[]>) =>
      r.status === 'rejected' &&
      ['ENODATA', 'ENOTFOUND'].includes((r.reason as { code?: string })?.code ?? '');
    if (notFound(v4) && notFound(v6)) return [];
    throw v4.status === 'rejected' ? v4.reason : (v6 as PromiseRejectedResult).reason;
  }
  return out.sort();
};

/** The URL of one discovered address: IPv6 in brackets. */
export function addressUrl(scheme: string, address: string, port: number, path: string): string {
  const host = address.includes(':') ? `[${address}]` : address;
  const p = path && !path.startsWith('/') ? `/${path}` : path;
  return `${scheme}://${host}:${port}${p.replace(/\/+$/, '')}`;
}
