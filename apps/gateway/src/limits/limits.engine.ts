import { randomBytes } from 'node:crypto';
import {
  ApiError,
  type CatalogEntry,
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_LIMITS,
  type EffectiveLimits,
  ErrorType,
  type LimitState,
  type LimitsFile,
  type LimitsOverride,
  LimitsOverrideSchema,
  mergeLimits,
  type Tier,
} from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import type { Redis } from 'ioredis';
import { estimateOutputTokens, estimatePromptTokens } from './estimate.js';
import { formatResetDuration, retryAfterSeconds } from './periods.js';
import {
  type Check,
  type LimitSubject,
  type PlanContext,
  planImages,
  planModel,
  planSearch,
  type RebuildQuery,
  redisKeyOf,
} from './plan.js';
import { ADMIT_LUA, RENEW_LUA, SEED_LUA, SETTLE_LUA } from './scripts.js';

/** Where lost quota counters are rebuilt from: the usage ledger (PostgreSQL). */
export interface LedgerSource {
  total(q: RebuildQuery): Promise<number>;
}

export interface LimitsEngineOptions {
  redis: Redis;
  ledger: LedgerSource;
  log: Logger;
  /** The limits file (already validated); the spec's defaults fill what it does not say. */
  file?: LimitsFile;
  /** Off: every request is admitted and nothing is counted (benchmarks, or limits enforced elsewhere). */
  enabled?: boolean;
  /** Prefix of every Redis key. */
  prefix?: string;
  /** Epoch milliseconds. Injectable for tests; all replicas must share a clock (NTP). */
  clock?: () => number;
  /**
   * Longest a request may hold its slots: an admission never settled by then (a bug in a caller) is
   * released by the renewal loop instead of being renewed forever. Default 15 minutes.
   */
  maxHoldMs?: number;
  /** Observers (metrics). */
  on?: {
    refused?(limit: string, status: number): void;
    rebuilt?(limit: string): void;
  };
}

/** Extra time a fixed-window counter outlives its window (clock skew between replicas). */
const WINDOW_GRACE_MS = 60_000;

type RedisWithScripts = Redis & {
  limAdmit(...args: (string | number)[]): Promise<number[]>;
  limSettle(...args: (string | number)[]): Promise<number>;
  limRenew(...args: (string | number)[]): Promise<number>;
  limSeed(...args: (string | number)[]): Promise<number>;
};

/**
 * The outcome of an admitted request: the headers to send and the slots/reservations it holds.
 * Call settle() exactly once when the request ends, however it ends (later calls do nothing).
 */
export class Admission {
  private done = false;

  constructor(
    private readonly engine: LimitsEngine | null,
    readonly headers: Record<string, string>,
    readonly leaseId: string,
    readonly checks: readonly Check[],
    /** Tokens reserved on each token budget: the prompt estimate. */
    readonly reserved: number,
    /** Tokens held besides on each token quota (holdsOutput): the possible output. */
    readonly held: number,
    /** Clock reading at admission. */
    readonly at: number,
  ) {}

  get holdsLeases(): boolean {
    return this.checks.some((c) => c.kind === 'L' && c.cost > 0);
  }

  /**
   * Releases the concurrency slots and charges the token budgets with the real usage (the reservation
   * is replaced by `totalTokens`; 0 when the request produced nothing). Fire and forget: failures are
   * logged, and leases left behind expire on their own.
   */
  settle(totalTokens = 0): Promise<void> {
    if (this.done || !this.engine) return Promise.resolve();
    this.done = true;
    return this.engine.settle(this, totalTokens);
  }

  /** settle() for requests that use no tokens (search, images) or whose usage is unknown as 0. */
  release(): Promise<void> {
    return this.settle(0);
  }

  static readonly none = new Admission(null, {}, '', [], 0, 0, 0);
}

/**
 * Every limit of the spec, enforced in Redis: each request's checks and takes run as one Lua script
 * (one round trip), concurrency slots are leases renewed while the request runs, token budgets are
 * reserved with the prompt estimate and settled with the real usage, and quota counters that Redis
 * lost are rebuilt from the usage ledger before anything is admitted against them.
 */
export class LimitsEngine {
  readonly enabled: boolean;
  readonly prefix: string;
  readonly leaseTtlMs: number;
  clock: () => number;
  private readonly redis: RedisWithScripts;
  private readonly base: EffectiveLimits;
  private readonly file: LimitsFile;
  private readonly byTier = new Map<Tier, EffectiveLimits>();
  private readonly byOverrides = new WeakMap<object, { tier: Tier; limits: EffectiveLimits }>();
  private readonly warnedOverrides = new WeakSet<object>();
  private readonly active = new Set<Admission>();
  private renewTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LimitsEngineOptions) {
    this.enabled = opts.enabled ?? true;
    this.prefix = opts.prefix ?? 'lim:';
    this.file = opts.file ?? {};
    this.leaseTtlMs = this.file.lease_ttl_ms ?? DEFAULT_LEASE_TTL_MS;
    this.clock = opts.clock ?? Date.now;
    this.base = mergeLimits(DEFAULT_LIMITS, this.file);
    const r = opts.redis as RedisWithScripts;
    if (typeof r.limAdmit !== 'function') {
      r.defineCommand('limAdmit', { lua: ADMIT_LUA });
      r.defineCommand('limSettle', { lua: SETTLE_LUA });
      r.defineCommand('limRenew', { lua: RENEW_LUA });
      r.defineCommand('limSeed', { lua: SEED_LUA, numberOfKeys: 1 });
    }
    this.redis = r;
  }

  /** Starts renewing the leases of running requests (every third of the lease TTL). */
  start(): void {
    if (!this.enabled || this.renewTimer) return;
    this.renewTimer = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.leaseTtlMs / 3)));
    this.renewTimer.unref();
  }

  /** Stops renewing and releases the slots this replica still holds. */
  async stop(): Promise<void> {
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    await Promise.allSettled([...this.active].map((a) => a.settle(0)));
  }

  /** Requests of this replica that hold concurrency slots right now. */
  get activeCount(): number {
    return this.active.size;
  }

  /** The limits that apply to a key: defaults < file < file.tiers[tier] < the key's overrides. */
  limitsFor(subject: Pick<LimitSubject, 'tier' | 'overrides'>): EffectiveLimits {
    let tierLimits = this.byTier.get(subject.tier);
    if (!tierLimits) {
      tierLimits = mergeLimits(this.base, this.file.tiers?.[subject.tier]);
      this.byTier.set(subject.tier, tierLimits);
    }
    const o = subject.overrides;
    if (!o) return tierLimits;
    const hit = this.byOverrides.get(o);
    if (hit && hit.tier === subject.tier) return hit.limits;
    const parsed = LimitsOverrideSchema.safeParse(o);
    let limits = tierLimits;
    if (parsed.success) limits = mergeLimits(tierLimits, parsed.data as LimitsOverride);
    else if (!this.warnedOverrides.has(o)) {
      this.warnedOverrides.add(o);
      this.opts.log.warn({ issues: parsed.error.issues }, 'ignoring invalid per-key limit overrides');
    }
    this.byOverrides.set(o, { tier: subject.tier, limits });
    return limits;
  }

  /** Admits one request to a model endpoint, or throws the 429/402 ApiError with its headers. */
  admitModel(subject: LimitSubject, model: CatalogEntry, body: unknown): Promise<Admission> {
    if (!this.enabled) return Promise.resolve(Admission.none);
    const now = this.clock();
    const estimate = estimatePromptTokens(body);
    const checks = planModel(this.ctx(subject, now), model, estimate);
    // Token budgets also hold the possible output until settle (so concurrent requests cannot together
    // overspend an allowance); the admission check itself is on the prompt estimate, as before.
    return this.admit(checks, now, estimate, estimateOutputTokens(body, model, estimate));
  }

  /**
   * Admits one image request for routes that do not resolve an image model themselves (model routes
   * with an `image` model get the same checks from admitModel).
   */
  admitImages(subject: LimitSubject): Promise<Admission> {
    if (!this.enabled) return Promise.resolve(Admission.none);
    const now = this.clock();
    return this.admit(planImages(this.ctx(subject, now)), now, 0);
  }

  /** Admits one web search or MCP tool call (the shared search budget of the key). */
  admitSearch(subject: LimitSubject): Promise<Admission> {
    if (!this.enabled) return Promise.resolve(Admission.none);
    const now = this.clock();
    return this.admit(planSearch(this.ctx(subject, now)), now, 0);
  }

  private ctx(subject: LimitSubject, now: number): PlanContext {
    return { subject, limits: this.limitsFor(subject), prefix: this.prefix, now };
  }

  private async admit(checks: Check[], now: number, estimate: number, hold = 0): Promise<Admission> {
    if (!checks.length) return Admission.none;
    const leaseId = randomBytes(12).toString('base64url');
    const keys = checks.map(redisKeyOf);
    const args: (string | number)[] = [
      keys.length,
      ...keys,
      now,
      leaseId,
      now + this.leaseTtlMs,
      checks.length,
    ];
    for (const c of checks) args.push(...this.checkArgs(c, now), c.holdsOutput && c.cost > 0 ? hold : 0);
    let res = await this.call(() => this.redis.limAdmit(...args));
    if (res[0] === -1) {
      await this.rebuild(
        res.slice(1).map((i) => checks[i - 1]!),
        now,
      );
      res = await this.call(() => this.redis.limAdmit(...args));
      if (res[0] === -1) throw ApiError.internal('Quota counters could not be rebuilt.');
    }
    if (res[0] === 0) {
      const c = checks[res[1]! - 1]!;
      this.opts.on?.refused?.(c.name.replace(/^models\.[^.]+\./, 'models.'), c.status);
      throw this.refusal(c, res[2]!, res[3]!, now);
    }
    const headers: Record<string, string> = {};
    checks.forEach((c, i) => {
      if (!c.header) return;
      const used = res[3 + 2 * i]!;
      const resetMs = c.kind === 'W' ? c.win.end - now : c.kind === 'R' ? res[4 + 2 * i]! : 0;
      setRateHeaders(headers, c.header, c.limit, used, resetMs);
    });
    const adm = new Admission(this, headers, leaseId, checks, estimate, hold, now);
    if (adm.holdsLeases) this.active.add(adm);
    return adm;
  }

  private checkArgs(c: Check, now: number): (string | number)[] {
    switch (c.kind) {
      case 'W':
        return [
          'W',
          c.limit,
          c.cost,
          c.win.end,
          0,
          ttl(c.win.end - now + WINDOW_GRACE_MS),
          c.rebuild ? 1 : 0,
        ];
      case 'L':
        return ['L', c.limit, c.cost, 0, 0, 2 * this.leaseTtlMs, 0];
      case 'R':
        return ['R', c.limit, c.cost, c.bucketMs, c.buckets, ttl(c.bucketMs * (c.buckets + 1)), 0];
    }
  }

  /** Redis errors become a retryable 503: limits are never skipped silently. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      this.opts.log.error({ err }, 'limits store (Redis) failed');
      throw new ApiError(503, 'The rate-limit store is unavailable. Retry shortly.', {
        type: ErrorType.server,
        code: 'service_unavailable',
      });
    }
  }

  private refusal(c: Check, retryMs: number, used: number, now: number): ApiError {
    const headers: Record<string, string> = {};
    if (c.status === 429) headers['retry-after'] = String(retryAfterSeconds(retryMs));
    if (c.header)
      setRateHeaders(headers, c.header, c.limit, used, c.kind === 'W' ? c.win.end - now : retryMs);
    // Concurrency has its own x-ratelimit-*-concurrent-requests (slots, slots free, when to retry).
    else if (c.kind === 'L') setRateHeaders(headers, 'concurrent-requests', c.limit, used, retryMs);
    return new ApiError(c.status, c.message(retryMs, now), { type: c.type, code: c.code, headers });
  }

  /** Rebuilds quota counters that Redis does not have from the ledger (set only if still missing). */
  private async rebuild(checks: Check[], now: number): Promise<void> {
    for (const c of checks) {
      if (c.kind !== 'W' || !c.rebuild) continue;
      const q = c.rebuild(c.win);
      let total: number;
      try {
        total = await this.opts.ledger.total(q);
      } catch (err) {
        this.opts.log.error({ err, counter: c.name }, 'cannot rebuild a quota counter from the ledger');
        throw new ApiError(503, 'Quota counters are being rebuilt and the usage ledger is unavailable.', {
          type: ErrorType.server,
          code: 'service_unavailable',
        });
      }
      const seeded = await this.call(() =>
        this.redis.limSeed(redisKeyOf(c), total, ttl(c.win.end - now + WINDOW_GRACE_MS)),
      );
      if (seeded) {
        this.opts.on?.rebuilt?.(c.name.replace(/^models\.[^.]+\./, 'models.'));
        this.opts.log.info({ counter: redisKeyOf(c), total }, 'quota counter rebuilt from the ledger');
      }
    }
  }

  /** See Admission.settle. */
  async settle(adm: Admission, totalTokens: number): Promise<void> {
    this.active.delete(adm);
    const now = this.clock();
    const keys: string[] = [];
    const ops: (string | number)[] = [];
    const used = Math.max(0, Math.round(totalTokens));
    for (const c of adm.checks) {
      if (c.cost === 0) continue;
      // The real use replaces what admission took: the prompt estimate, and the held output on quotas.
      const delta = used - adm.reserved - (c.holdsOutput ? adm.held : 0);
      if (c.kind === 'L') {
        keys.push(c.key);
        ops.push('L', 0, '', 0);
      } else if (c.settlesTokens && delta !== 0 && c.kind === 'W') {
        // More tokens go to the window current now; a refund goes back where the reservation was.
        const win = delta > 0 ? c.period(now) : c.win;
        keys.push(`${c.base}:${win.id}`);
        ops.push(c.rebuild ? 'WX' : 'W', delta, '', ttl(win.end - now + WINDOW_GRACE_MS));
      } else if (c.settlesTokens && delta !== 0 && c.kind === 'R') {
        const bucket = Math.floor((delta > 0 ? now : adm.at) / c.bucketMs);
        keys.push(c.key);
        ops.push('R', delta, bucket, ttl(c.bucketMs * (c.buckets + 1)));
      }
    }
    if (!keys.length) return;
    try {
      await this.redis.limSettle(keys.length, ...keys, adm.leaseId, keys.length, ...ops);
    } catch (err) {
      this.opts.log.error({ err }, 'could not settle limits; leases will expire on their own');
    }
  }

  /** Pushes the expiry of every lease this replica holds (one script call). */
  async renew(): Promise<void> {
    if (!this.active.size) return;
    const now = this.clock();
    const maxHold = this.opts.maxHoldMs ?? 15 * 60_000;
    for (const a of [...this.active]) {
      if (now - a.at > maxHold) {
        this.opts.log.warn({ leaseId: a.leaseId }, 'an admission was never settled; releasing its slots');
        void a.settle(0);
      }
    }
    const keys: string[] = [];
    const ids: string[] = [];
    for (const a of this.active) {
      for (const c of a.checks) {
        if (c.kind === 'L' && c.cost > 0) {
          keys.push(c.key);
          ids.push(a.leaseId);
        }
      }
    }
    try {
      if (!keys.length) return;
      await this.redis.limRenew(keys.length, ...keys, now + this.leaseTtlMs, 2 * this.leaseTtlMs, ...ids);
    } catch (err) {
      this.opts.log.warn({ err }, 'could not renew concurrency leases');
    }
  }

  /**
   * The current state of every limit of a key: its own and its member's, for each model of the
   * catalog it may use, web search and images. Takes nothing; a quota counter missing in Redis is
   * rebuilt from the ledger and stored, as the next admission would do.
   */
  async state(
    subject: LimitSubject,
    models: readonly CatalogEntry[],
    /** Only the limits this keeps are read (e.g. the member's quotas): nothing else touches Redis. */
    only?: (limit: Pick<LimitState, 'scope' | 'window'>) => boolean,
  ): Promise<LimitState[]> {
    const now = this.clock();
    const ctx = this.ctx(subject, now);
    const seen = new Set<string>();
    const checks: Check[] = [];
    const add = (cs: Check[]) => {
      for (const c of cs) {
        if (only && !only(c)) continue;
        const k = redisKeyOf(c);
        if (seen.has(k)) continue;
        seen.add(k);
        checks.push(c);
      }
    };
    for (const m of models) add(planModel(ctx, m, 0, true));
    add(planSearch(ctx, true));
    const pipe = this.redis.pipeline();
    for (const c of checks) {
      const k = redisKeyOf(c);
      if (c.kind === 'W') pipe.get(k);
      else if (c.kind === 'L') pipe.zcount(k, `(${now}`, '+inf');
      else pipe.hgetall(k);
    }
    const results = (await this.call(() => pipe.exec())) ?? [];
    // Quota counters Redis does not have are rebuilt from the ledger and stored exactly as an
    // admission would (rebuild(): set only if still missing), so the next read is a plain GET.
    const missing = checks.filter(
      (c, i) => c.kind === 'W' && c.rebuild && !results[i]?.[0] && (results[i]?.[1] ?? null) === null,
    );
    const rebuilt = new Map<string, number>();
    if (missing.length) {
      await this.rebuild(missing, now);
      const again = this.redis.pipeline();
      for (const c of missing) again.get(redisKeyOf(c));
      const values = (await this.call(() => again.exec())) ?? [];
      missing.forEach((c, i) => {
        rebuilt.set(redisKeyOf(c), Number(values[i]?.[1] ?? 0));
      });
    }
    const out: LimitState[] = [];
    for (const [i, c] of checks.entries()) {
      const [err, value] = results[i] ?? [null, null];
      if (err) throw err;
      let used = 0;
      let resetsAt: number | null = null;
      if (c.kind === 'W') {
        used = value === null && c.rebuild ? (rebuilt.get(redisKeyOf(c)) ?? 0) : Number(value ?? 0);
        resetsAt = c.win.end;
      } else if (c.kind === 'L') {
        used = Number(value ?? 0);
      } else {
        const cur = Math.floor(now / c.bucketMs);
        let oldest = Number.POSITIVE_INFINITY;
        for (const [f, v] of Object.entries((value ?? {}) as Record<string, string>)) {
          const idx = Number(f);
          if (idx <= cur - c.buckets) continue;
          used += Number(v);
          if (Number(v) > 0) oldest = Math.min(oldest, idx);
        }
        resetsAt = Number.isFinite(oldest) ? (oldest + c.buckets) * c.bucketMs : null;
      }
      out.push({
        name: c.name,
        scope: c.scope,
        model: c.model,
        unit: c.unit,
        window: c.window,
        limit: c.limit,
        used,
        remaining: Math.max(0, c.limit - used),
        resets_at: resetsAt === null ? null : Math.ceil(resetsAt / 1000),
        status: c.status,
        code: c.code,
      });
    }
    return out;
  }
}

function ttl(ms: number): number {
  return Math.max(1000, Math.ceil(ms));
}

function setRateHeaders(
  h: Record<string, string>,
  unit: 'requests' | 'tokens' | 'concurrent-requests',
  limit: number,
  used: number,
  resetMs: number,
): void {
  h[`x-ratelimit-limit-${unit}`] = String(limit);
  h[`x-ratelimit-remaining-${unit}`] = String(Math.max(0, limit - used));
  h[`x-ratelimit-reset-${unit}`] = formatResetDuration(resetMs);
}
