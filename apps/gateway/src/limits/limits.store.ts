import { createHash, randomBytes } from 'node:crypto';
import {
  ApiError,
  type CatalogEntry,
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_LIMITS,
  type EffectiveLimits,
  ErrorType,
  formatMoney,
  type LimitState,
  type LimitsFile,
  type LimitsOverride,
  LimitsOverrideSchema,
  mergeLimits,
  costOf as priceOf,
  priceTable,
  type Tier,
} from '@infer/contracts';
import { isRedisCluster, redisSlot } from '@infer/rpc';
import { type Logger } from '@infer/telemetry';
import type { Redis } from 'ioredis';
import { estimatePromptTokens, outputReservation, TypicalOutput } from './estimate.js';
import { formatResetDuration, retryAfterSeconds } from './periods.js';
import {
  type Check,
  costOf,
  type LimitSubject,
  memberTag,
  type PlanContext,
  planImages,
  planModel,
  planSearch,
  planSlot,
  type RebuildQuery,
  redisKeyOf,
  windowAt,
} from './plan.js';
import { BATCH_LUA, RENEW_LUA, SEED_LUA } from './scripts.js';

/** The name of the limit behind each refusal (a WeakMap: the ApiError shape stays the contracts' one). */
const refusedLimits = new WeakMap<ApiError, string>();

/** The limit that refused a request (e.g. `key.requests_per_minute`), when `err` is a limits refusal. */
export function refusedLimitOf(err: unknown): string | undefined {
  return err instanceof ApiError ? refusedLimits.get(err) : undefined;
}

/** Where lost quota counters are rebuilt from: the usage ledger (PostgreSQL). */
export interface LedgerSource {
  total(q: RebuildQuery): Promise<number>;
}

export interface LimitsStoreOptions {
  redis: Redis;
  ledger: LedgerSource;
  log: Logger;
  /** The limits file (already validated); the spec's defaults fill what it does not say. */
  file?: LimitsFile;
  /** Off: every request is admitted and nothing is counted (benchmarks, or limits enforced elsewhere). */
  enabled?: boolean;
  /** Prefix of every Redis key (no `{` or `}`: the member's hash tag follows it). */
  prefix?: string;
  /** Epoch milliseconds. Injectable for tests; all replicas must share a clock (NTP). */
  clock?: () => number;
  /**
   * Longest a request may hold its slots: an admission never settled by then (a bug in a caller) is
   * released by the renewal loop instead of being renewed forever. Default 15 minutes.
   */
  maxHoldMs?: number;
  /** Most admissions and settlements in one script call (default 64): bounds how long one call runs. */
  maxBatch?: number;
  /** Script calls in flight per Redis slot (default 2); more requests wait for the next batch. */
  maxInFlight?: number;
  /**
   * A script call not answered by then fails its admissions with 503 (default 900 ms), whatever the
   * client's own retries: with a Redis Cluster slot left without a node, ioredis keeps retrying. Until a
   * call to that slot succeeds again, its new admissions fail at once (one probe call at a time).
   */
  callTimeoutMs?: number;
  /** Observers (metrics). */
  on?: {
    refused?(limit: string, status: number): void;
    rebuilt?(limit: string): void;
    /**
     * A budget or token allowance reached `threshold` percent of its limit in its period (seen at an
     * admission, or 100 when it refused one): the alerts. Called once per threshold, period and
     * counter on this replica; the receiver makes it once across replicas.
     */
    threshold?(t: ThresholdReached): Promise<unknown> | undefined;
  };
  /** Percentages of a budget or allowance that raise an alert (default 80, 90, 100). */
  alertThresholds?: readonly number[];
}

/** A threshold of a budget or allowance reached (LimitsEngineOptions.on.threshold). */
export interface ThresholdReached {
  name: string;
  scope: 'key' | 'member';
  unit: 'tokens' | 'nano_usd';
  memberId: string;
  keyId: string;
  model: string | null;
  periodId: string;
  periodStart: number;
  periodEnd: number;
  threshold: number;
  used: number;
  limit: number;
}

/** Extra time a fixed-window counter outlives its window (clock skew between replicas). */
const WINDOW_GRACE_MS = 60_000;
/** Plans kept (one per key and model in use); the cache starts over when full. */
const MAX_PLANS = 50_000;

/**
 * A Lua script called by its SHA1 (EVALSHA), loaded with EVAL when a Redis does not know it yet (a new,
 * restarted or promoted node). Called as plain EVALSHA rather than an ioredis custom command so that
 * ioredis routes it by its first key on a cluster. The gateway's client sends EVALSHA/EVAL outside its
 * auto-pipeline (app.ts): the store batches per turn itself.
 */
class Script {
  readonly sha: string;
  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run<T>(redis: Redis, keys: string[], args: (string | number)[]): Promise<T> {
    try {
      return (await redis.evalsha(this.sha, keys.length, ...keys, ...args)) as T;
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return (await redis.eval(this.lua, keys.length, ...keys, ...args)) as T;
    }
  }
}

const BATCH = new Script(BATCH_LUA);
const RENEW = new Script(RENEW_LUA);
const SEED = new Script(SEED_LUA);

/** The checks of one key on one model (or its search / image budget), built once and reused. */
interface Plan {
  checks: Check[];
  /** The checks as the script reads them (BATCH_LUA: kind code, limit[, bucket ms, buckets]). */
  spec: (string | number)[];
  /** It takes a concurrency slot. */
  leases: boolean;
  /** It has a token limit (the request's output is reserved on it). */
  tokens: boolean;
  /** It has a budget (the request's cost is reserved on it). */
  money: boolean;
  /** Its budgets and allowances (alerts watch them), with their index in `checks`. */
  watched: number[];
  lane: Lane;
  /** What the plan was built from: a change (new overrides, tier, anchor) builds it again. */
  limits: EffectiveLimits;
  model: CatalogEntry | null;
  memberId: string;
  keyId: string;
  anchor: number;
}

/** Admissions and settlements waiting for the next script call on one Redis slot. */
interface Lane {
  queue: Pending[];
  inFlight: number;
  scheduled: boolean;
  /** The last call failed or timed out: admissions fail at once while one probe call is out. */
  down: boolean;
}

interface PendingAdmit {
  t: 'A';
  keys: string[];
  args: (string | number)[];
  resolve(res: (number | string)[]): void;
  reject(err: unknown): void;
}

interface PendingSettle {
  t: 'S';
  keys: string[];
  args: (string | number)[];
  done: () => void;
}

type Pending = PendingAdmit | PendingSettle;

/**
 * The outcome of an admitted request: the headers to send and the slots/reservations it holds.
 * Call settle() exactly once when the request ends, however it ends (later calls do nothing).
 */
export class Admission {
  private done = false;
  /** @internal Where the store's list of admissions holding slots has it (-1: not there). */
  activeAt = -1;

  constructor(
    private readonly store: LimitsStore | null,
    readonly headers: Record<string, string>,
    readonly leaseId: string,
    readonly checks: readonly Check[],
    /** The Redis key each check used (the window current at admission). */
    readonly keys: readonly string[],
    /** Tokens reserved on each token budget: the prompt estimate. */
    readonly reserved: number,
    /** Tokens held besides on each token limit (holdsOutput): the output reserved (outputReservation). */
    readonly held: number,
    /** Clock reading at admission. */
    readonly at: number,
    /** Takes concurrency slots (renewed while it runs). */
    readonly holdsLeases: boolean,
    /** @internal */ readonly lane: Lane | null,
    /** The model whose typical output this request's real usage teaches (null: it does not). */
    readonly learns: string | null = null,
    /** Nano-dollars reserved on each budget: the prompt estimate and held output at the model's prices. */
    readonly reservedCost = 0,
  ) {}

  /**
   * Releases the concurrency slots and charges the token budgets with the real usage (the reservation
   * is replaced by `totalTokens`; 0 when the request produced nothing). Fire and forget: failures are
   * logged, and leases left behind expire on their own. The promise settles when Redis has it (the
   * settlement rides on the next script call to the member's Redis slot).
   */
  settle(totalTokens = 0, cost = 0): Promise<void> {
    if (this.done || !this.store) return Promise.resolve();
    this.done = true;
    return this.store.settle(this, totalTokens, cost);
  }

  /** settle() for requests that use no tokens (search, images) or whose usage is unknown as 0. */
  release(): Promise<void> {
    return this.settle(0);
  }

  static readonly none = new Admission(null, {}, '', [], [], 0, 0, 0, false, null);
}

/**
 * Every limit of the spec, enforced in Redis: each request's checks and takes run atomically in one
 * Lua script call, batched with the other requests and settlements bound for the same Redis slot;
 * concurrency slots are leases renewed while the request runs; token budgets are reserved with the
 * prompt estimate and settled with the real usage; quota counters that Redis lost are rebuilt from
 * the usage ledger before anything is admitted against them. All the keys of one member carry the
 * member's hash tag, so on a Redis Cluster one admission never crosses slots (ADR 0013).
 */
export class LimitsStore {
  readonly enabled: boolean;
  readonly prefix: string;
  readonly leaseTtlMs: number;
  /**
   * How long a set of leases lives without renewals: set when the set is created and pushed by every
   * renewal (not by every admission). Only a dead replica's leases on a key nobody uses any more stay
   * that long; live ones are renewed every third of the lease TTL.
   */
  readonly leaseKeyTtlMs: number;
  clock: () => number;
  private readonly redis: Redis;
  private readonly cluster: boolean;
  private readonly base: EffectiveLimits;
  private readonly file: LimitsFile;
  private readonly byTier = new Map<Tier, EffectiveLimits>();
  private readonly byOverrides = new WeakMap<object, { tier: Tier; limits: EffectiveLimits }>();
  private readonly warnedOverrides = new WeakSet<object>();
  /**
   * Admissions holding concurrency slots, renewed while they run: an array where each knows its index
   * (removal moves the last one into its place), not a Set. A long-lived Set that gains and loses an
   * entry per request rebuilds its table every few dozen requests, and V8 keeps each replaced table, with
   * the admissions it held, in the old generation until a full collection: every admission (its headers,
   * keys, lease id) survived the scavenges until then and was promoted (bench/results/data-path-issue-13.md).
   */
  private readonly active: Admission[] = [];
  private readonly plans = new Map<string, Plan>();
  private readonly lanes = new Map<number, Lane>();
  private readonly singleLane: Lane = newLane();
  private readonly maxBatch: number;
  private readonly thresholds: readonly number[];
  private readonly maxInFlight: number;
  private readonly callTimeoutMs: number;
  /** Lease ids: this replica's random prefix and a counter (unique across replicas, no per-request RNG). */
  private readonly leasePrefix = randomBytes(9).toString('base64url');
  /** What each model's requests typically produce (learned from settlements on this replica). */
  readonly typical = new TypicalOutput();
  private leaseSeq = 0;
  private renewTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LimitsStoreOptions) {
    this.enabled = opts.enabled ?? true;
    this.prefix = opts.prefix ?? 'lim:';
    if (/[{}]/.test(this.prefix))
      throw new Error(
        `LIMITS_REDIS_PREFIX "${this.prefix}" must not contain { or } (the member's hash tag follows it)`,
      );
    this.file = opts.file ?? {};
    this.leaseTtlMs = this.file.lease_ttl_ms ?? DEFAULT_LEASE_TTL_MS;
    this.leaseKeyTtlMs = Math.max(2 * this.leaseTtlMs, 3_600_000);
    this.clock = opts.clock ?? Date.now;
    this.maxBatch = opts.maxBatch ?? 64;
    this.thresholds = [...(opts.alertThresholds ?? [80, 90, 100])].sort((a, b) => a - b);
    this.maxInFlight = opts.maxInFlight ?? 2;
    this.callTimeoutMs = opts.callTimeoutMs ?? 900;
    this.base = mergeLimits(DEFAULT_LIMITS, this.file);
    this.redis = opts.redis;
    this.cluster = isRedisCluster(opts.redis);
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
    return this.active.length;
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
    const estimate = estimatePromptTokens(body);
    const plan = this.plan(subject, model);
    if (model.kind !== 'chat') {
      if (!plan.money) return this.admit(plan, this.clock(), estimate);
      // A budget reserves what the request will cost: its input, or the images it asks for.
      const n = (body as { n?: unknown } | null)?.n;
      const cost = priceOf(priceTable(model), {
        kind: model.kind,
        promptTokens: estimate,
        completionTokens: 0,
        images: typeof n === 'number' && n > 0 ? n : 1,
      });
      return this.admit(plan, this.clock(), estimate, 0, 0, null, cost, cost);
    }
    // Token limits also hold the request's output until settle, so that concurrent requests cannot
    // together spend past them: what such a request typically produces, once this replica knows it
    // (outputReservation, docs/api-decisions.md). Every chat request teaches the typical output, with
    // token limits or not.
    const r = outputReservation(body, model, estimate, this.typical.of(model.id));
    const learns = r.learns ? model.id : null;
    let take = 0;
    let need = 0;
    if (plan.money) {
      // Budgets reserve the prompt estimate and the held output at the model's prices, and need the
      // output that must fit (as token limits do with tokens).
      const prices = priceTable(model);
      take = priceOf(prices, { kind: 'chat', promptTokens: estimate, completionTokens: r.hold });
      need = priceOf(prices, { kind: 'chat', promptTokens: estimate, completionTokens: r.need });
    }
    if (!plan.tokens) return this.admit(plan, this.clock(), estimate, 0, 0, learns, take, need);
    return this.admit(plan, this.clock(), estimate, r.hold, r.need, learns, take, need);
  }

  /**
   * Admits one image request for routes that do not resolve an image model themselves (model routes
   * with an `image` model get the same checks from admitModel).
   */
  admitImages(subject: LimitSubject): Promise<Admission> {
    if (!this.enabled) return Promise.resolve(Admission.none);
    return this.admit(this.plan(subject, 'images'), this.clock(), 0);
  }

  /**
   * Admits one web search or MCP tool call (the shared search budget of the key); `cost` (nano-dollars,
   * the price of a search) is reserved against the budgets and settled with what the search cost.
   */
  admitSearch(subject: LimitSubject, cost = 0): Promise<Admission> {
    if (!this.enabled) return Promise.resolve(Admission.none);
    const plan = this.plan(subject, 'search');
    if (!plan.money || !cost) return this.admit(plan, this.clock(), 0);
    return this.admit(plan, this.clock(), 0, 0, 0, null, cost, cost);
  }

  /** The cached plan of a key for a model (or its image / search budget), built on first use. */
  private plan(subject: LimitSubject, what: CatalogEntry | 'images' | 'search'): Plan {
    const model = typeof what === 'string' ? null : what;
    const id = `${subject.keyId}\u0000${model ? model.id : what}`;
    const limits = this.limitsFor(subject);
    const anchor = +subject.billingAnchor;
    const hit = this.plans.get(id);
    if (
      hit &&
      hit.limits === limits &&
      hit.model === model &&
      hit.memberId === subject.memberId &&
      hit.anchor === anchor
    )
      return hit;
    const ctx = this.ctx(subject, limits);
    const checks = model ? planModel(ctx, model) : what === 'images' ? planImages(ctx) : planSearch(ctx);
    // Every key of one admission in one hash slot, or no admission at all (a 500 naming the keys).
    if (this.cluster) planSlot(checks, redisSlot, this.clock());
    const plan: Plan = {
      checks,
      spec: scriptSpec(checks),
      leases: checks.some((c) => c.kind === 'L'),
      tokens: checks.some((c) => c.unit === 'tokens'),
      money: checks.some((c) => c.unit === 'nano_usd'),
      watched: checks.flatMap((c, i) => (watched(c) ? [i] : [])),
      lane: this.laneOf(ctx.prefix),
      limits,
      model,
      memberId: subject.memberId,
      keyId: subject.keyId,
      anchor,
    };
    if (this.plans.size >= MAX_PLANS) this.plans.clear();
    this.plans.set(id, plan);
    return plan;
  }

  private ctx(subject: LimitSubject, limits = this.limitsFor(subject)): PlanContext {
    return { subject, limits, prefix: memberTag(this.prefix, subject.memberId) };
  }

  /** One lane per Redis Cluster slot (all of a member's keys share it); one lane for a single Redis. */
  private laneOf(memberPrefix: string): Lane {
    if (!this.cluster) return this.singleLane;
    const slot = redisSlot(memberPrefix);
    let lane = this.lanes.get(slot);
    if (!lane) {
      lane = newLane();
      this.lanes.set(slot, lane);
    }
    return lane;
  }

  private nextLeaseId(): string {
    this.leaseSeq = (this.leaseSeq + 1) % Number.MAX_SAFE_INTEGER;
    return this.leasePrefix + this.leaseSeq.toString(36);
  }

  private async admit(
    plan: Plan,
    now: number,
    estimate: number,
    hold = 0,
    need = 0,
    learns: string | null = null,
    moneyTake = 0,
    moneyNeed = 0,
  ): Promise<Admission> {
    const checks = plan.checks;
    if (!checks.length) return Admission.none;
    const leaseId = this.nextLeaseId();
    const keys: string[] = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const c = checks[i]!;
      keys[i] = c.kind === 'W' ? windowAt(c, now).key : c.key;
    }
    const args: (string | number)[] = [
      'A',
      leaseId,
      now,
      estimate,
      hold,
      need,
      moneyTake,
      moneyNeed,
      checks.length,
      ...plan.spec,
    ];
    const leases = plan.leases;
    let res = await this.submit(plan.lane, keys, args);
    // A quota counter Redis does not have (a new period, or lost data): rebuilt from the ledger, then
    // the request is tried again (each try reports the first missing counter; a plan has at most two).
    for (let tries = 0; res[0] === -1; tries++) {
      if (tries === 3) throw ApiError.internal('Quota counters could not be rebuilt.');
      await this.rebuild(
        res.slice(1).map((i) => checks[Number(i) - 1]!),
        now,
      );
      res = await this.submit(plan.lane, keys, args);
    }
    if (res[0] !== 0 && res[0] !== 1)
      throw ApiError.internal('The limits script gave no answer for a request.');
    if (res[0] === 0) {
      const c = checks[Number(res[1]) - 1]!;
      this.opts.on?.refused?.(c.name.replace(/^models\.[^.]+\./, 'models.'), c.status);
      const retry = c.kind === 'W' ? windowAt(c, now).win.end - now : Number(res[2]);
      // A spent budget or allowance refusing a request: its 100 % alert.
      if (c.status === 402 && watched(c)) this.reached(plan, c, Number(res[3]), now, 100);
      throw this.refusal(c, retry, Number(res[3]), now, estimate);
    }
    for (const i of plan.watched) this.reached(plan, checks[i]!, Number(res[1 + 2 * i]), now);
    const headers: Record<string, string> = {};
    for (let i = 0; i < checks.length; i++) {
      const c = checks[i]!;
      if (!c.header) continue;
      const used = Number(res[1 + 2 * i]);
      const resetMs =
        c.kind === 'W' ? windowAt(c, now).win.end - now : c.kind === 'R' ? Number(res[2 + 2 * i]) : 0;
      setRateHeaders(headers, c.header, c.limit, used, resetMs);
    }
    const adm = new Admission(
      this,
      headers,
      leaseId,
      checks,
      keys,
      estimate,
      hold,
      now,
      leases,
      plan.lane,
      learns,
      moneyTake,
    );
    if (leases) {
      adm.activeAt = this.active.length;
      this.active.push(adm);
    }
    return adm;
  }

  /** Queues an admission on its lane; resolves with its part of the script's answer. */
  private submit(lane: Lane, keys: string[], args: (string | number)[]): Promise<(number | string)[]> {
    // A slot that just failed: fail at once while the probe call finds out whether it is back.
    if (lane.down && lane.inFlight > 0) return Promise.reject(storeUnavailable());
    return new Promise((resolve, reject) => {
      lane.queue.push({ t: 'A', keys, args, resolve, reject });
      // An idle lane sends at once (with whatever settlements wait): at low load an admission does
      // not wait for the end of the turn of the event loop. A busy lane batches as below.
      if (lane.inFlight === 0 && !lane.scheduled && !lane.down) this.flush(lane);
      else this.schedule(lane);
    });
  }

  private schedule(lane: Lane): void {
    if (lane.scheduled || lane.inFlight >= (lane.down ? 1 : this.maxInFlight)) return;
    lane.scheduled = true;
    // Everything queued in this turn of the event loop goes in one call.
    setImmediate(() => {
      lane.scheduled = false;
      this.flush(lane);
    });
  }

  /** Sends what a lane has queued (up to maxBatch records) as one script call. */
  private flush(lane: Lane): void {
    if (!lane.queue.length || lane.inFlight >= (lane.down ? 1 : this.maxInFlight)) return;
    const batch = lane.queue.length <= this.maxBatch ? lane.queue : lane.queue.slice(0, this.maxBatch);
    lane.queue = lane.queue.length <= this.maxBatch ? [] : lane.queue.slice(this.maxBatch);
    const keys: string[] = [];
    const argv: (string | number)[] = [batch.length, this.leaseTtlMs, WINDOW_GRACE_MS, this.leaseKeyTtlMs];
    for (const p of batch) {
      for (const k of p.keys) keys.push(k);
      for (const a of p.args) argv.push(a);
    }
    lane.inFlight++;
    let over = false;
    const fail = (err: unknown) => {
      lane.down = true;
      this.opts.log.error({ err }, 'limits store (Redis) failed');
      const unavailable = storeUnavailable();
      let settles = 0;
      for (const p of batch) {
        if (p.t === 'A') p.reject(unavailable);
        else {
          settles++;
          p.done();
        }
      }
      if (settles)
        this.opts.log.error({ settles }, 'could not settle limits; leases will expire on their own');
      this.landed(lane);
    };
    // One timer per call, not per request.
    const timer = setTimeout(() => {
      if (over) return;
      over = true;
      fail(new Error(`no answer from Redis in ${this.callTimeoutMs} ms`));
    }, this.callTimeoutMs);
    BATCH.run<(number | string)[][]>(this.redis, keys, argv).then(
      (out) => {
        clearTimeout(timer);
        if (over) return;
        over = true;
        lane.down = false;
        let j = 0;
        for (const p of batch) {
          if (p.t === 'A') p.resolve(out[j++] ?? [-2]);
          else p.done();
        }
        this.landed(lane);
      },
      (err: unknown) => {
        clearTimeout(timer);
        if (over) return;
        over = true;
        fail(err);
      },
    );
  }

  private landed(lane: Lane): void {
    lane.inFlight--;
    if (!lane.queue.length) return;
    if (lane.down) {
      // Fail the waiting admissions now rather than after another timeout; settlements wait for the probe.
      const unavailable = storeUnavailable();
      lane.queue = lane.queue.filter((p) => {
        if (p.t === 'A') p.reject(unavailable);
        return p.t === 'S';
      });
    }
    if (lane.queue.length >= this.maxBatch) this.flush(lane);
    else this.schedule(lane);
  }

  /** Alerts already raised by this replica: `<redis key>|<threshold>` (the receiver dedupes across replicas). */
  private readonly raised = new Set<string>();

  /**
   * Raises the thresholds a budget or allowance has reached (`used` after this admission's take, or
   * `atLeast` percent when a refusal says it is spent), each once per counter and period here.
   */
  private reached(plan: Plan, c: Check, used: number, now: number, atLeast = 0): void {
    const on = this.opts.on?.threshold;
    if (!on || c.kind !== 'W' || c.limit <= 0) return;
    const { win, key } = windowAt(c, now);
    for (const t of this.thresholds) {
      if (used * 100 < t * c.limit && t > atLeast) break;
      const id = `${key}|${t}`;
      if (this.raised.has(id)) continue;
      if (this.raised.size >= MAX_PLANS) this.raised.clear();
      this.raised.add(id);
      try {
        const p = on({
          name: c.name,
          scope: c.scope,
          unit: c.unit === 'nano_usd' ? 'nano_usd' : 'tokens',
          memberId: plan.memberId,
          keyId: plan.keyId,
          model: c.model,
          periodId: win.id,
          periodStart: win.start,
          periodEnd: win.end,
          threshold: t,
          used,
          limit: c.limit,
        });
        // Not stored: the next admission that sees it tries again.
        if (p) p.catch(() => this.raised.delete(id));
      } catch (err) {
        this.opts.log.error({ err }, 'an alert threshold observer failed');
      }
    }
  }

  /** Redis errors become a retryable 503: limits are never skipped silently. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      this.opts.log.error({ err }, 'limits store (Redis) failed');
      throw storeUnavailable();
    }
  }

  private refusal(c: Check, retryMs: number, used: number, now: number, estimate: number): ApiError {
    const headers: Record<string, string> = {};
    if (c.status === 429) headers['retry-after'] = String(retryAfterSeconds(retryMs));
    if (c.unit === 'nano_usd') {
      // A budget: its amount and what is left in dollars, and when it starts again (as x-ratelimit-reset-*).
      headers['x-budget-limit'] = formatMoney(c.limit);
      headers['x-budget-remaining'] = formatMoney(Math.max(c.limit - used, 0));
      headers['x-budget-reset'] = formatResetDuration(retryMs);
    }
    if (c.header) setRateHeaders(headers, c.header, c.limit, used, retryMs);
    // Concurrency has its own x-ratelimit-*-concurrent-requests (slots, slots free, when to retry).
    else if (c.kind === 'L') setRateHeaders(headers, 'concurrent-requests', c.limit, used, retryMs);
    const err = new ApiError(c.status, c.message(retryMs, now, estimate), {
      type: c.type,
      code: c.code,
      headers,
    });
    // The limit that refused it, for whoever settles the refusal (the request log: call/outcome.ts).
    refusedLimits.set(err, c.name);
    return err;
  }

  /** Rebuilds quota counters that Redis does not have from the ledger (set only if still missing). */
  private async rebuild(checks: Check[], now: number): Promise<void> {
    for (const c of checks) {
      if (c.kind !== 'W' || !c.rebuild) continue;
      const { win, key } = windowAt(c, now);
      const q = c.rebuild(win);
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
        SEED.run<number>(this.redis, [key], [total, ttl(win.end - now + WINDOW_GRACE_MS)]),
      );
      if (seeded) {
        this.opts.on?.rebuilt?.(c.name.replace(/^models\.[^.]+\./, 'models.'));
        this.opts.log.info({ counter: key, total }, 'quota counter rebuilt from the ledger');
      }
    }
  }

  /** See Admission.settle. */
  settle(adm: Admission, totalTokens: number, cost = 0): Promise<void> {
    this.deactivate(adm);
    const now = this.clock();
    const keys: string[] = [];
    const args: (string | number)[] = ['S', adm.leaseId, 0];
    const used = Math.max(0, Math.round(totalTokens));
    if (adm.learns !== null && used > 0) this.typical.observe(adm.learns, used - adm.reserved);
    for (let i = 0; i < adm.checks.length; i++) {
      const c = adm.checks[i]!;
      if (c.unit === 'nano_usd') {
        // A budget: the real cost replaces the reserved one (more to the month current now).
        const d = Math.max(0, Math.round(cost)) - adm.reservedCost;
        if (d !== 0 && c.kind === 'W') {
          keys.push(d > 0 ? windowAt(c, now).key : adm.keys[i]!);
          args.push('X', d);
        }
        continue;
      }
      if (costOf(c, adm.reserved) === 0) continue;
      // The real use replaces what admission took: the prompt estimate, and the held output on quotas.
      const delta = used - adm.reserved - (c.holdsOutput ? adm.held : 0);
      if (c.kind === 'L') {
        keys.push(c.key);
        args.push('L');
      } else if (c.settlesTokens && delta !== 0 && c.kind === 'W') {
        // More tokens go to the window current now; a refund goes back where the reservation was.
        keys.push(delta > 0 ? windowAt(c, now).key : adm.keys[i]!);
        args.push(c.rebuild ? 'X' : 'W', delta);
      } else if (c.settlesTokens && delta !== 0 && c.kind === 'R') {
        const bucket = Math.floor((delta > 0 ? now : adm.at) / c.bucketMs);
        // A refund to a bucket that already left the window has nothing left to give back.
        if (bucket <= Math.floor(now / c.bucketMs) - c.buckets) continue;
        keys.push(c.key);
        args.push('R', delta, bucket, ttl(c.bucketMs * (c.buckets + 1)));
      }
    }
    if (!keys.length || !adm.lane) return Promise.resolve();
    args[2] = keys.length;
    const lane = adm.lane;
    return new Promise<void>((done) => {
      lane.queue.push({ t: 'S', keys, args, done });
      this.schedule(lane);
    });
  }

  /** Takes an admission out of `active` (the last one moves into its place; pop() leaves no reference). */
  private deactivate(adm: Admission): void {
    const i = adm.activeAt;
    if (i < 0) return;
    adm.activeAt = -1;
    const last = this.active.pop()!;
    if (last !== adm) {
      this.active[i] = last;
      last.activeAt = i;
    }
  }

  /** Pushes the expiry of every lease this replica holds (one script call per Redis slot). */
  async renew(): Promise<void> {
    if (!this.active.length) return;
    const now = this.clock();
    const maxHold = this.opts.maxHoldMs ?? 15 * 60_000;
    for (const a of [...this.active]) {
      if (now - a.at > maxHold) {
        this.opts.log.warn({ leaseId: a.leaseId }, 'an admission was never settled; releasing its slots');
        void a.settle(0);
      }
    }
    const byLane = new Map<Lane | null, { keys: string[]; ids: string[] }>();
    for (const a of this.active) {
      let group = byLane.get(a.lane);
      if (!group) {
        group = { keys: [], ids: [] };
        byLane.set(a.lane, group);
      }
      for (const c of a.checks) {
        if (c.kind === 'L') {
          group.keys.push(c.key);
          group.ids.push(a.leaseId);
        }
      }
    }
    await Promise.all(
      [...byLane.values()].map(async ({ keys, ids }) => {
        if (!keys.length) return;
        try {
          await RENEW.run(this.redis, keys, [now + this.leaseTtlMs, this.leaseKeyTtlMs, ...ids]);
        } catch (err) {
          this.opts.log.warn({ err }, 'could not renew concurrency leases');
        }
      }),
    );
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
    const ctx = this.ctx(subject);
    const seen = new Set<string>();
    const checks: Check[] = [];
    const add = (cs: Check[]) => {
      for (const c of cs) {
        if (only && !only(c)) continue;
        const k = redisKeyOf(c, now);
        if (seen.has(k)) continue;
        seen.add(k);
        checks.push(c);
      }
    };
    for (const m of models) add(planModel(ctx, m));
    add(planSearch(ctx));
    // Every key here carries the member's hash tag: one pipeline to one Redis slot.
    const pipe = this.redis.pipeline();
    for (const c of checks) {
      const k = redisKeyOf(c, now);
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
      for (const c of missing) again.get(redisKeyOf(c, now));
      const values = (await this.call(() => again.exec())) ?? [];
      missing.forEach((c, i) => {
        rebuilt.set(redisKeyOf(c, now), Math.max(0, Number(values[i]?.[1] ?? 1) - 1));
      });
    }
    const out: LimitState[] = [];
    for (const [i, c] of checks.entries()) {
      const [err, value] = results[i] ?? [null, null];
      if (err) throw err;
      let used = 0;
      let resetsAt: number | null = null;
      if (c.kind === 'W') {
        const { win } = windowAt(c, now);
        // Quota counters are kept as use + 1 (see BATCH_LUA and SEED_LUA).
        if (value === null && c.rebuild) used = rebuilt.get(redisKeyOf(c, now)) ?? 0;
        else used = Math.max(0, Number(value ?? 0) - (c.rebuild ? 1 : 0));
        resetsAt = win.end;
      } else if (c.kind === 'L') {
        used = Number(value ?? 0);
      } else {
        const cur = Math.floor(now / c.bucketMs);
        let oldest = Number.POSITIVE_INFINITY;
        for (const [f, v] of Object.entries((value ?? {}) as Record<string, string>)) {
          if (!/^\d+$/.test(f)) continue; // the running total and the oldest bucket's index
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

/**
 * The checks in the script's form (see BATCH_LUA): a kind code that also says what the check costs and
 * takes, its limit, and for a rolling window its bucket length and count. Built once per plan.
 */
function scriptSpec(checks: readonly Check[]): (string | number)[] {
  const spec: (string | number)[] = [];
  for (const c of checks) {
    if (c.kind === 'L') spec.push('L', c.limit);
    else if (c.kind === 'R') {
      if (!c.holdsOutput || c.unit !== 'tokens')
        throw new Error(`rolling check ${c.name}: tokens holding output only`);
      spec.push('R', c.limit, c.bucketMs, c.buckets);
    } else if (c.rebuild) {
      // Quota counters (must exist): token quotas hold the possible output, request quotas take 1.
      if (c.unit === 'tokens' && !c.holdsOutput)
        throw new Error(`quota ${c.name}: a token quota holds output`);
      spec.push(c.unit === 'tokens' ? 'Q' : c.unit === 'nano_usd' ? 'M' : 'q', c.limit);
    } else {
      if (c.window !== 'minute')
        throw new Error(`check ${c.name}: counters without a rebuild are per minute`);
      spec.push(c.unit === 'tokens' ? 't' : 'r', c.limit);
    }
  }
  return spec;
}

/** Budgets and token allowances (per month or billing period): what alerts watch. */
function watched(c: Check): boolean {
  return (
    c.kind === 'W' &&
    c.rebuild !== undefined &&
    (c.unit === 'nano_usd' ||
      (c.unit === 'tokens' && (c.window === 'month' || c.window === 'billing_period')))
  );
}

function newLane(): Lane {
  return { queue: [], inFlight: 0, scheduled: false, down: false };
}

function storeUnavailable(): ApiError {
  return new ApiError(503, 'The rate-limit store is unavailable. Retry shortly.', {
    type: ErrorType.server,
    code: 'service_unavailable',
  });
}

function ttl(ms: number): number {
  return Math.max(1000, Math.ceil(ms));
}

/** The x-ratelimit-* header names of each unit, built once. */
const HEADER_NAMES = {
  requests: names('requests'),
  tokens: names('tokens'),
  'concurrent-requests': names('concurrent-requests'),
};

function names(unit: string) {
  return {
    limit: `x-ratelimit-limit-${unit}`,
    remaining: `x-ratelimit-remaining-${unit}`,
    reset: `x-ratelimit-reset-${unit}`,
  };
}

function setRateHeaders(
  h: Record<string, string>,
  unit: 'requests' | 'tokens' | 'concurrent-requests',
  limit: number,
  used: number,
  resetMs: number,
): void {
  const n = HEADER_NAMES[unit];
  h[n.limit] = String(limit);
  h[n.remaining] = String(Math.max(limit - used, 0));
  h[n.reset] = formatResetDuration(resetMs);
}
