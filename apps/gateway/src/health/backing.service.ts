import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { NATS, PG, REDIS } from '../infra/tokens.js';

interface Pingable {
  query(text: string): Promise<unknown>;
}

/** A backing server as this gateway reaches it. */
export interface BackingState {
  name: 'postgresql' | 'redis' | 'nats';
  up: boolean;
  /** Round trip of the check (ms); null when it failed. */
  latency_ms: number | null;
  /** Why it is down (the error, or `no answer within 1 s`); null when up. */
  reason: string | null;
  /** Unix milliseconds of the check. */
  checked_at: number;
}

const TIMEOUT_MS = 1000;
/** /readyz and the console's overview share one round of checks per second. */
const CACHE_MS = 1000;

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, rej) => {
      timer = setTimeout(() => rej(new Error(`no answer within ${ms / 1000} s`)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

const reasonOf = (e: unknown) => {
  const m = String((e as Error)?.message ?? e).split('\n')[0] ?? '';
  return m.length > 200 ? `${m.slice(0, 197)}...` : m || 'failed';
};

/**
 * The gateway's backing servers, each pinged within 1 s: PostgreSQL (`SELECT 1`), Redis (`PING`),
 * NATS (a flush round trip). What /readyz answers and what the console's overview shows; at most one
 * round per second however many ask.
 */
@Injectable()
export class BackingChecks {
  private cached: { at: number; value: Promise<BackingState[]> } | null = null;

  constructor(
    @Inject(PG) private readonly db: Pingable,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(NATS) private readonly nc: NatsConnection,
  ) {}

  check(): Promise<BackingState[]> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < CACHE_MS) return this.cached.value;
    const value = Promise.all([
      this.one('postgresql', () => this.db.query('SELECT 1')),
      this.one('redis', () => this.redis.ping()),
      this.one('nats', () => {
        if (this.nc.isClosed()) throw new Error('connection closed');
        return this.nc.flush();
      }),
    ]);
    this.cached = { at: now, value };
    return value;
  }

  private async one(name: BackingState['name'], ping: () => Promise<unknown>): Promise<BackingState> {
    const start = performance.now();
    try {
      await within(Promise.resolve().then(ping), TIMEOUT_MS);
      return {
        name,
        up: true,
        latency_ms: Math.round((performance.now() - start) * 10) / 10,
        reason: null,
        checked_at: Date.now(),
      };
    } catch (e) {
      return { name, up: false, latency_ms: null, reason: reasonOf(e), checked_at: Date.now() };
    }
  }
}
