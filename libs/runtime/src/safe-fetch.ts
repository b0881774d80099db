import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Agent, fetch as UndiciFetch } from 'undici';

/**
 * Fetching URLs that a client (or a search result) names, without letting it reach inside our network:
 * only http(s); every address the host resolves to must be public unicast (no loopback, private,
 * link-local (incl. cloud metadata 169.254.169.254), unique-local, CGNAT, multicast or reserved ranges),
 * checked at connect time so DNS rebinding cannot slip through; redirects are followed by hand and each
 * hop is checked again; body size, time and content type are bounded.
 */
export type SafeFetchReason =
  | 'invalid_url'
  | 'blocked_address'
  | 'too_many_redirects'
  | 'timeout'
  | 'too_large'
  | 'bad_status'
  | 'bad_content_type'
  | 'network';

export class SafeFetchError extends Error {
  constructor(
    readonly reason: SafeFetchReason,
    message: string,
  ) {
    super(message);
    this.name = 'SafeFetchError';
  }
}

export interface SafeFetchOptions {
  maxBytes: number;
  timeoutMs: number;
  /** Accepted media types (prefix match, e.g. 'image/' or 'text/html'); any when omitted. */
  allowedContentTypes?: string[];
  maxRedirects?: number;
  /** `host` or `host:port` entries exempt from the address check (operator-configured, tests). */
  allowHosts?: string[];
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

export interface SafeFetchResult {
  status: number;
  contentType: string;
  body: Buffer;
  finalUrl: string;
}

/** IPv6 global unicast (RFC 4291): every public IPv6 address is in it, for now and for years to come. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * True when `address` is a public unicast address we may connect to. An allow-list for IPv6: only
 * global unicast (2000::/3) outside every special range counts, so the IPv4-compatible form
 * (`::a9fe:a9fe` = 169.254.169.254), the deprecated site-local fec0::/10, ORCHID 2001:10::/28 and any
 * range ipaddr.js does not name yet are refused; IPv4-mapped addresses are judged as the IPv4 they carry.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    else if (!v6.match(GLOBAL_UNICAST_V6)) return false;
  }
  // ipaddr.js names every special-purpose range (private, loopback, link-local, CGNAT, reserved,
  // benchmarking, 6to4, Teredo, NAT64 ...): only what it calls plain unicast is public.
  return ip.range() === 'unicast';
}

function allowed(host: string, port: string, allowHosts: string[] | undefined): boolean {
  if (!allowHosts?.length) return false;
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return allowHosts.some((a) => a.toLowerCase() === h || a.toLowerCase() === `${h}:${port}`);
}

/** A DNS lookup that refuses to hand out non-public addresses. */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as unknown as Array<{ address: string; family: number }>;
    const bad = list.find((a) => !isPublicAddress(a.address));
    if (bad || list.length === 0) {
      const e = new SafeFetchError('blocked_address', `${hostname} resolves to a non-public address`);
      return callback(e as NodeJS.ErrnoException, '', 0);
    }
    if ((options as { all?: boolean }).all)
      return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
    const first = list[0]!;
    callback(null, first.address, first.family);
  });
};

/**
 * undici (about 27 MiB of RSS with its WASM HTTP parser) and the two agents, made on the first fetch:
 * every app imports this kit, few of them fetch URLs (the gateway never does).
 */
let http: Promise<{ fetch: typeof UndiciFetch; guarded: Agent; open: Agent }> | null = null;
const undici = () =>
  (http ??= import('undici').then((u) => ({
    fetch: u.fetch,
    guarded: new u.Agent({ connect: { lookup: guardedLookup }, keepAliveTimeout: 10_000 }),
    open: new u.Agent({ keepAliveTimeout: 10_000 }),
  })));

export async function safeFetch(url: string, opts: SafeFetchOptions): Promise<SafeFetchResult> {
  const maxRedirects = opts.maxRedirects ?? 3;
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  let current = url;
  const { fetch: undiciFetch, guarded: guardedAgent, open: openAgent } = await undici();
  for (let hop = 0; ; hop++) {
    let u: URL;
    try {
      u = new URL(current);
    } catch {
      throw new SafeFetchError('invalid_url', 'not a valid URL');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw new SafeFetchError('invalid_url', 'only http and https URLs can be fetched');
    }
    if (u.username || u.password)
      throw new SafeFetchError('invalid_url', 'URLs with credentials are refused');
    const port = u.port || (u.protocol === 'https:' ? '443' : '80');
    const exempt = allowed(u.hostname, port, opts.allowHosts);
    const literal = u.hostname.replace(/^\[|\]$/g, '');
    if (!exempt && isIP(literal) && !isPublicAddress(literal)) {
      throw new SafeFetchError('blocked_address', 'the URL points to a non-public address');
    }
    let res: Awaited<ReturnType<typeof UndiciFetch>>;
    try {
      res = await undiciFetch(u, {
        redirect: 'manual',
        signal,
        dispatcher: exempt ? openAgent : guardedAgent,
        headers: { 'user-agent': 'infer-platform/1.0 (+safe-fetch)', ...opts.headers },
      });
    } catch (e) {
      throw toFetchError(e, timeout);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
      await res.body?.cancel().catch(() => undefined);
      if (hop >= maxRedirects) throw new SafeFetchError('too_many_redirects', 'too many redirects');
      current = new URL(res.headers.get('location')!, u).toString();
      continue;
    }
    if (res.status < 200 || res.status >= 300) {
      await res.body?.cancel().catch(() => undefined);
      throw new SafeFetchError('bad_status', `the server answered ${res.status}`);
    }
    const contentType = (res.headers.get('content-type') ?? '').toLowerCase();
    if (opts.allowedContentTypes && !opts.allowedContentTypes.some((t) => contentType.startsWith(t))) {
      await res.body?.cancel().catch(() => undefined);
      throw new SafeFetchError('bad_content_type', `content type ${contentType || '(none)'} is not accepted`);
    }
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    if (declared > opts.maxBytes) {
      await res.body?.cancel().catch(() => undefined);
      throw new SafeFetchError('too_large', `the resource is larger than ${opts.maxBytes} bytes`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body ?? []) {
        size += chunk.length;
        if (size > opts.maxBytes) {
          throw new SafeFetchError('too_large', `the resource is larger than ${opts.maxBytes} bytes`);
        }
        chunks.push(Buffer.from(chunk));
      }
    } catch (e) {
      await res.body?.cancel().catch(() => undefined);
      throw toFetchError(e, timeout);
    }
    return { status: res.status, contentType, body: Buffer.concat(chunks, size), finalUrl: u.toString() };
  }
}

function toFetchError(e: unknown, timeout: AbortSignal): SafeFetchError {
  if (e instanceof SafeFetchError) return e;
  const cause = (e as { cause?: unknown })?.cause;
  if (cause instanceof SafeFetchError) return cause;
  if (timeout.aborted) return new SafeFetchError('timeout', 'the fetch timed out');
  if ((e as Error)?.name === 'AbortError') return new SafeFetchError('timeout', 'the fetch was aborted');
  return new SafeFetchError('network', 'the resource could not be fetched');
}
