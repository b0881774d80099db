import { createHash } from 'node:crypto';
import type { SearchRequest, SearchResult } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import type { Redis } from 'ioredis';

export interface CacheOptions {
  /** Redis key prefix. */
  prefix: string;
  /** How long an answer is served from the cache (ms); 0 turns the cache off. */
  ttlMs: number;
  /** The service clock (ms since epoch): entries older than ttlMs by it are misses. */
  clock: () => number;
}

interface Entry {
  /** Clock time the answer was stored. */
  at: number;
  results: SearchResult[];
}

/** The query as the cache compares it: Unicode-normalized, trimmed, single-spaced, lower case. */
export function normalizeQuery(q: string): string {
  return q.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * The ~15-minute cache of identical searches in Redis (shared by every replica). Identical means the
 * same engine, normalized query, count, freshness and fetch_content. Entries carry the clock time they
 * were stored and are stale once `ttlMs` have passed by the service clock (injectable, for tests); Redis
 * also expires them (PX) so nothing lingers. A Redis failure is logged and the search runs uncached.
 */
export class SearchCache {
  constructor(
    private readonly redis: Redis,
    private readonly opts: CacheOptions,
    private readonly log: Logger,
  ) {}

  get enabled(): boolean {
    return this.opts.ttlMs > 0;
  }

  key(engine: string, req: SearchRequest): string {
    const id = JSON.stringify([
      engine,
      normalizeQuery(req.query),
      req.count,
      req.freshness ?? '',
      req.fetch_content,
    ]);
    return `${this.opts.prefix}:${createHash('sha256').update(id).digest('hex')}`;
  }

  async get(key: string): Promise<SearchResult[] | null> {
    if (!this.enabled) return null;
    let raw: string | null;
    try {
      raw = await this.redis.get(key);
    } catch (err) {
      this.log.warn({ err }, 'search cache read failed; searching uncached');
      return null;
    }
    if (!raw) return null;
    try {
      const e = JSON.parse(raw) as Entry;
      const age = this.opts.clock() - e.at;
      if (!Array.isArray(e.results) || age < 0 || age >= this.opts.ttlMs) return null;
      return e.results;
    } catch {
      return null;
    }
  }

  async set(key: string, results: SearchResult[]): Promise<void> {
    if (!this.enabled) return;
    const entry: Entry = { at: this.opts.clock(), results };
    try {
      await this.redis.set(key, JSON.stringify(entry), 'PX', this.opts.ttlMs);
    } catch (err) {
      this.log.warn({ err }, 'search cache write failed');
    }
  }
}
