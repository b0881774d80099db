import { hash } from 'node:crypto';
import { ApiError, ErrorCode, ErrorType, type Tier } from '@infer/contracts';

/** Who a valid key belongs to: everything the hot path needs, from one lookup. */
export interface AuthedKey {
  keyId: string;
  memberId: string;
  tier: Tier;
  /** Start of the member's billing periods (chat-G's allowance period). */
  billingAnchor: Date;
  /** Per-key limit overrides set by the admin CLI (read by the limits store). */
  overrides: Record<string, unknown> | null;
  /**
   * Epoch ms after which the presented secret no longer works: the key's expires_at, or for an old
   * secret kept by a rotation its grace end, whichever comes first (Infinity: never). One comparison
   * per request; the cache TTL does not delay it.
   */
  notAfter: number;
  /** The key's expires_at (epoch ms, Infinity: never): tells key_expired from an old secret's end. */
  expiresAt: number;
  /** Models the key may call (null: all its tier reaches). */
  models: ReadonlySet<string> | null;
  /** Whether a client address is in the key's allow-list (null: any address). Built once per lookup. */
  ipAllowed: ((address: string | undefined) => boolean) | null;
  /** The member's body-logging switch (ADR 0110): absent when off. */
  logBodies?: boolean;
}

export interface KeyStore {
  /** The active (not revoked) key with this SHA-256 hex hash, or null. */
  findActiveByHash(hash: string): Promise<AuthedKey | null>;
}

/** SHA-256 hex of a key: Node's one-shot `crypto.hash` (no Hash object per request; same digest). */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

interface Entry {
  value: AuthedKey | null;
  expires: number;
  /** When the store last confirmed this answer. */
  verifiedAt: number;
}

export interface KeyCacheOptions {
  /**
   * While the store fails (PostgreSQL down), a key it confirmed within this long keeps working from
   * the cache (ms); a key it never confirmed gets a 503. 0 turns the grace off.
   */
  staleMs?: number;
  /** Store lookups that find no key, per client address and window, before 429 (invalid-key floods). */
  missesPerWindow?: number;
  missWindowMs?: number;
  maxEntries?: number;
}

function unavailable(): ApiError {
  return new ApiError(503, 'API keys cannot be verified right now; retry shortly.', {
    type: 'server_error',
    code: 'service_unavailable',
    headers: { 'retry-after': '5' },
  });
}

function flood(retryAfterS: number): ApiError {
  return new ApiError(429, 'Too many requests with unknown API keys from this address; slow down.', {
    type: ErrorType.rateLimit,
    code: ErrorCode.rateLimit,
    headers: { 'retry-after': String(retryAfterS) },
  });
}

/**
 * Caches key lookups (hits and misses) for `ttlMs`, so a revoked key stops working within that time
 * while the hot path usually costs no database round trip. Concurrent lookups of one key share one
 * query. Bounded: the oldest entries are dropped past `maxEntries`.
 *
 * When the store fails, a key it confirmed within `staleMs` keeps working (stale-while-error), a key
 * it did not gets a 503, never a 500. Store lookups that find nothing are counted per client address:
 * past `missesPerWindow` in `missWindowMs` that address gets 429s without a query (an invalid-key
 * flood costs the database nothing); misses are cached like hits, so repeating one bad key is free.
 * A key the store has confirmed before is never throttled that way: other keys' failures from the same
 * address (a shared NAT, an attacker next door) do not lock out a known-good key.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<AuthedKey | null>>();
  private readonly misses = new Map<string, { count: number; windowStart: number }>();
  /**
   * Hashes of keys the store has confirmed as valid (kept through invalidations and expiries, bounded
   * by maxEntries): a known-good key is never refused by the invalid-key throttle of its address, which
   * counts other keys' failures. Its lookup still asks the store, so a revoked one is refused.
   */
  private readonly knownGood = new Set<string>();
  private readonly staleMs: number;
  private readonly missesPerWindow: number;
  private readonly missWindowMs: number;
  private readonly maxEntries: number;
  /** Bumped by clear(): a lookup that started before a clear must not store what it read. */
  private generation = 0;

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    options: KeyCacheOptions | number = {},
  ) {
    const o = typeof options === 'number' ? { maxEntries: options } : options;
    this.staleMs = o.staleMs ?? 10 * 60_000;
    this.missesPerWindow = o.missesPerWindow ?? 30;
    this.missWindowMs = o.missWindowMs ?? 10_000;
    this.maxEntries = o.maxEntries ?? 100_000;
  }

  /** The key's owner, or null when no active key has it. `client` (an address) meters invalid-key floods. */
  lookup(key: string, client?: string): Promise<AuthedKey | null> {
    return this.lookupHash(hashKey(key), client);
  }

  /**
   * The cached answer for a key's hash while it is fresh (no store query, no promise: the hot path), or
   * undefined when the cache does not hold it or it expired (lookupHash() then).
   */
  cached(hash: string): AuthedKey | null | undefined {
    const hit = this.entries.get(hash);
    return hit !== undefined && hit.expires > this.now() ? hit.value : undefined;
  }

  /** lookup() by the key's SHA-256 hex (hashKey). */
  async lookupHash(hash: string, client?: string): Promise<AuthedKey | null> {
    const hit = this.entries.get(hash);
    const now = this.now();
    if (hit && hit.expires > now) return hit.value;
    const inflight = this.pending.get(hash);
    if (inflight) return inflight;
    if (client !== undefined && !hit && !this.knownGood.has(hash)) this.checkFlood(client, now);
    const generation = this.generation;
    const p = this.store
      .findActiveByHash(hash)
      .then(
        (value) => {
          // Read before an admin change was announced: answer it, but do not keep it.
          if (generation === this.generation) this.remember(hash, value);
          if (value === null) {
            this.knownGood.delete(hash);
            if (client !== undefined) this.countMiss(client);
          } else if (!this.knownGood.has(hash)) this.addKnownGood(hash);
          return value;
        },
        (err: unknown) => {
          // The store is down: serve what it confirmed recently, refuse what it never did.
          if (hit && this.now() - hit.verifiedAt <= this.staleMs) return hit.value;
          throw err instanceof ApiError ? err : unavailable();
        },
      )
      .finally(() => {
        if (this.pending.get(hash) === p) this.pending.delete(hash);
      });
    this.pending.set(hash, p);
    return p;
  }

  private remember(hash: string, value: AuthedKey | null): void {
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.delete(hash);
    const now = this.now();
    this.entries.set(hash, { value, expires: now + this.ttlMs, verifiedAt: now });
  }

  private addKnownGood(hash: string): void {
    if (this.knownGood.size >= this.maxEntries) {
      const oldest = this.knownGood.values().next().value;
      if (oldest !== undefined) this.knownGood.delete(oldest);
    }
    this.knownGood.add(hash);
  }

  private checkFlood(client: string, now: number): void {
    const m = this.misses.get(client);
    if (!m) return;
    if (now - m.windowStart >= this.missWindowMs) {
      this.misses.delete(client);
      return;
    }
    if (m.count >= this.missesPerWindow) {
      throw flood(Math.max(1, Math.ceil((m.windowStart + this.missWindowMs - now) / 1000)));
    }
  }

  private countMiss(client: string): void {
    const now = this.now();
    let m = this.misses.get(client);
    if (!m || now - m.windowStart >= this.missWindowMs) {
      if (this.misses.size >= 10_000) {
        const oldest = this.misses.keys().next().value;
        if (oldest !== undefined) this.misses.delete(oldest);
      }
      m = { count: 0, windowStart: now };
      this.misses.delete(client);
      this.misses.set(client, m);
    }
    m.count++;
  }

  /**
   * Drops the cached lookups of the keys `keyIds` and of every key of the members `memberIds`, and every
   * cached miss (a key just created or unsuspended may be cached as unknown); the other keys stay, so
   * they keep working from the cache (and through a store outage) after an unrelated admin change.
   * Lookups already under way do not store what they read (it may predate the change).
   */
  invalidate(keyIds: readonly string[] = [], memberIds: readonly string[] = []): void {
    if (!keyIds.length && !memberIds.length) {
      this.clear();
      return;
    }
    this.generation++;
    this.pending.clear();
    const keys = new Set(keyIds);
    const members = new Set(memberIds);
    for (const [hash, e] of this.entries) {
      if (e.value === null || keys.has(e.value.keyId) || members.has(e.value.memberId))
        this.entries.delete(hash);
    }
  }

  /**
   * Drops every cached entry, and makes lookups already under way not store what they read (it may
   * predate the change): after an admin change, on every gateway (AdminInvalidation).
   */
  clear(): void {
    this.generation++;
    this.entries.clear();
    this.pending.clear();
  }
}
