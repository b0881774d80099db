import { createHash } from 'node:crypto';
import type { Tier } from '@infer/contracts';

/** Who a valid key belongs to: everything the hot path needs, from one lookup. */
export interface AuthedKey {
  keyId: string;
  memberId: string;
  tier: Tier;
  /** Start of the member's billing periods (chat-G's allowance period). */
  billingAnchor: Date;
  /** Per-key limit overrides set by the admin CLI (read by the limits engine). */
  overrides: Record<string, unknown> | null;
}

export interface KeyStore {
  /** The active (not revoked) key with this SHA-256 hex hash, or null. */
  findActiveByHash(hash: string): Promise<AuthedKey | null>;
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

interface Entry {
  value: AuthedKey | null;
  expires: number;
}

/**
 * Caches key lookups (hits and misses) for `ttlMs`, so a revoked key stops working within that time
 * while the hot path usually costs no database round trip. Concurrent lookups of one key share one
 * query. Bounded: the oldest entries are dropped past `maxEntries`.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<AuthedKey | null>>();

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 100_000,
  ) {}

  async lookup(key: string): Promise<AuthedKey | null> {
    const hash = hashKey(key);
    const hit = this.entries.get(hash);
    if (hit && hit.expires > this.now()) return hit.value;
    const inflight = this.pending.get(hash);
    if (inflight) return inflight;
    const p = this.store
      .findActiveByHash(hash)
      .then((value) => {
        if (this.entries.size >= this.maxEntries) {
          const oldest = this.entries.keys().next().value;
          if (oldest !== undefined) this.entries.delete(oldest);
        }
        this.entries.delete(hash);
        this.entries.set(hash, { value, expires: this.now() + this.ttlMs });
        return value;
      })
      .finally(() => this.pending.delete(hash));
    this.pending.set(hash, p);
    return p;
  }

  /** Drops every cached entry (used after an admin revokes a key through this gateway). */
  clear(): void {
    this.entries.clear();
  }
}
