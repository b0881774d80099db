// Key lifecycle rules shared by the admin API, the admin CLI and the gateway's auth: durations
// (`--expires-in 30d`, `--grace 24h`), CIDR allow-lists (IPv4 and IPv6, through ipaddr.js) and the
// compiled form the gateway caches with a key, so a request pays one timestamp comparison, one Set
// lookup and, only when the key has an allow-list, one CIDR match.
import ipaddr from 'ipaddr.js';

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};
const DURATION_RE = /^(?:\d+(?:ms|s|m|h|d|w))+$/;
const PART_RE = /(\d+)(ms|s|m|h|d|w)/g;

/** The longest duration accepted (100 years): beyond it a Date would stop making sense. */
export const MAX_DURATION_MS = 100 * 365 * 86_400_000;

/**
 * Milliseconds of a duration: `0`, or one or more `<integer><unit>` parts with units ms, s, m, h, d
 * (24 h) and w (7 d), e.g. `90s`, `15m`, `24h`, `30d`, `1h30m`. null when it is not one.
 */
export function parseDuration(text: string): number | null {
  const s = text.trim().toLowerCase();
  if (s === '0') return 0;
  if (!DURATION_RE.test(s)) return null;
  let total = 0;
  for (const [, n, unit] of s.matchAll(PART_RE)) total += Number(n) * (UNIT_MS[unit as string] as number);
  return total <= MAX_DURATION_MS ? total : null;
}

/** A CIDR block (`10.0.0.0/8`, `2001:db8::/32`) or a single address (`/32` or `/128` implied). */
export type ParsedCidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses one allow-list entry; null when it is neither a CIDR block nor an address. */
export function parseCidr(text: string): ParsedCidr | null {
  const s = text.trim();
  const slash = s.indexOf('/');
  const host = slash < 0 ? s : s.slice(0, slash);
  // Dotted quads only: ipaddr.js also reads legacy forms (`10.0.0`, `0x0a000001`) no operator means.
  if (!ipaddr.IPv4.isValidFourPartDecimal(host) && !ipaddr.IPv6.isValid(host)) return null;
  try {
    if (slash >= 0) {
      if (!/^\d{1,3}$/.test(s.slice(slash + 1))) return null;
      const [addr, bits] = ipaddr.parseCIDR(s);
      return normalise(addr, bits);
    }
    const addr = ipaddr.parse(s);
    return normalise(addr, addr.kind() === 'ipv4' ? 32 : 128);
  } catch {
    return null;
  }
}

/** An IPv4-mapped IPv6 block (`::ffff:10.0.0.0/104`) is the IPv4 block it names. */
function normalise(addr: ipaddr.IPv4 | ipaddr.IPv6, bits: number): ParsedCidr {
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  return [addr, bits];
}

/** The canonical text of an entry (`10.0.0.0/8`, `2001:db8::/32`), or null when it is invalid. */
export function canonicalCidr(text: string): string | null {
  const p = parseCidr(text);
  return p ? `${p[0].toString()}/${p[1]}` : null;
}

/**
 * A matcher for an allow-list, built once per cached key: true when `address` (as the gateway derived
 * it through the trusted-proxy rules; IPv4-mapped IPv6 counts as IPv4) falls in one of the blocks.
 * Invalid entries never match (the admin API and CLI refuse them before they are stored).
 */
export function cidrMatcher(cidrs: readonly string[]): (address: string | undefined) => boolean {
  const blocks = cidrs.map(parseCidr).filter((b): b is ParsedCidr => b !== null);
  const v4 = blocks.filter((b) => b[0].kind() === 'ipv4');
  const v6 = blocks.filter((b) => b[0].kind() === 'ipv6');
  return (address) => {
    if (!address) return false;
    let ip: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      ip = ipaddr.process(address);
    } catch {
      return false;
    }
    const list = ip.kind() === 'ipv4' ? v4 : v6;
    for (const [range, bits] of list) if (ip.match(range as never, bits)) return true;
    return false;
  };
}

/** A lifecycle change as the admin API and CLI take it (validated by UpdateKeyRequestSchema). */
export interface KeyLifecycleInput {
  expires_at?: string | number | null | undefined;
  expires_in?: string | undefined;
  allowed_models?: string[] | undefined;
  allowed_ips?: string[] | undefined;
}

/**
 * The change to store: expiry as a Date (null clears it; `expires_in` counts from `now`), model ids
 * de-duplicated, CIDR blocks in canonical form. What the input omits stays undefined (unchanged).
 */
export function lifecycleChange(
  input: KeyLifecycleInput,
  now = Date.now(),
): { expiresAt?: Date | null; allowedModels?: string[]; allowedIps?: string[] } {
  const out: { expiresAt?: Date | null; allowedModels?: string[]; allowedIps?: string[] } = {};
  if (input.expires_in !== undefined) out.expiresAt = new Date(now + (parseDuration(input.expires_in) ?? 0));
  else if (input.expires_at === null) out.expiresAt = null;
  else if (typeof input.expires_at === 'number') out.expiresAt = new Date(input.expires_at * 1000);
  else if (typeof input.expires_at === 'string') out.expiresAt = new Date(input.expires_at);
  if (input.allowed_models) out.allowedModels = [...new Set(input.allowed_models.map((m) => m.trim()))];
  if (input.allowed_ips) {
    out.allowedIps = [
      ...new Set(input.allowed_ips.map((c) => canonicalCidr(c)).filter((c): c is string => !!c)),
    ];
  }
  return out;
}
