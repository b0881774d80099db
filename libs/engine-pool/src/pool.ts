import { ApiError, type EnginePoolSettings, type PriorityClass } from '@infer/contracts';
import { currentCaller } from '@infer/rpc';
import { registerOpsStatus } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { addressUrl, type Resolver, resolveAddresses } from './discovery.js';
import { EngineReport, emptySample, parseEngineMetrics } from './engine-metrics.js';
import { poolMetrics } from './metrics.js';
import { CLASS_RANK, FairQueue, type Queued } from './queue.js';
import { HashRing } from './ring.js';

/** The pool settings of a catalog `engine` (parsed: defaults applied). */
export type PoolSettings = EnginePoolSettings;
export type RoutingPolicy = PoolSettings['routing'];

/**
 * How a request to an endpoint ended, as the pool counts it:
 * - ok, client_error (the endpoint answered; the request was at fault), aborted (the caller left):
 *   the endpoint is healthy;
 * - busy (408/429): the endpoint is alive but full: another one is tried, no cooldown;
 * - connect (refused, reset before the answer, DNS), status_5xx, timeout, broken (the stream stopped
 *   mid-way): the endpoint goes into a cooldown.
 */
export type Outcome =
  | 'ok'
  | 'client_error'
  | 'aborted'
  | 'busy'
  | 'connect'
  | 'status_5xx'
  | 'timeout'
  | 'broken';

const COOLS: Readonly<Record<Outcome, boolean>> = {
  ok: false,
  client_error: false,
  aborted: false,
  busy: false,
  connect: true,
  status_5xx: true,
  timeout: true,
  broken: true,
};
/** Outcomes after which another endpoint is tried (before the first byte reached the client). */
export const RETRYABLE: Readonly<Record<Outcome, boolean>> = { ...COOLS, busy: true };

/** A failure of one endpoint: `error` is what the client gets if no other endpoint answers. */
export class EndpointFailure extends Error {
  constructor(
    readonly outcome: Outcome,
    readonly error: unknown,
  ) {
    super(`endpoint ${outcome}`);
    this.name = 'EndpointFailure';
  }
}

export type EndpointState = 'up' | 'recovering' | 'cooling';

/** One server of a pool. Leases keep a reference: an endpoint dropped by discovery still settles. */
export class Endpoint {
  /** scheme://host:port, and the path without a trailing slash (undici's request() takes them apart). */
  readonly origin: string;
  readonly path: string;
  inflight = 0;
  state: EndpointState = 'up';
  /** Consecutive failures (cooldown backoff); reset by a success. */
  fails = 0;
  coolUntil = 0;
  recoverSince = 0;
  removed = false;
  probing = false;
  /** Smooth weighted round robin's running weight. */
  current = 0;
  /** Ring-walk visit stamp (no allocation per pick). */
  stamp = 0;
  requests = 0;
  errors = 0;
  /** Estimated prompt characters still to prefill: leases with a cost that have no first byte yet. */
  prefilling = 0;
  /** Long new prompts placed here lately (characters, decaying with COLD_HALF_LIFE_MS), and when. */
  coldLoad = 0;
  coldAt = 0;
  lastError: string | null = null;
  lastErrorAt = 0;
  /** What the engine reports on its /metrics (`metrics_path`): created at its first scrape. */
  engine: EngineReport | null = null;
  scraping = false;
  /** Whether a failed scrape was logged (once per endpoint: an engine without /metrics is no fault). */
  scrapeLogged = false;
  readonly m: {
    inflight: ReturnType<typeof poolMetrics.inflight.labels>;
    state: ReturnType<typeof poolMetrics.state.labels>;
    cooldowns: ReturnType<typeof poolMetrics.cooldowns.labels>;
    outcomes: Map<Outcome, ReturnType<typeof poolMetrics.requests.labels>>;
    cacheHitRate: ReturnType<typeof poolMetrics.cacheHitRate.labels>;
    waiting: ReturnType<typeof poolMetrics.engineWaiting.labels>;
  };

  constructor(
    readonly url: string,
    readonly weight: number,
    readonly model: string,
  ) {
    const u = new URL(url);
    this.origin = u.origin;
    this.path = u.pathname.replace(/\/+$/, '');
    this.m = {
      inflight: poolMetrics.inflight.labels(model, url),
      state: poolMetrics.state.labels(model, url),
      cooldowns: poolMetrics.cooldowns.labels(model, url),
      outcomes: new Map(),
      cacheHitRate: poolMetrics.cacheHitRate.labels(model, url),
      waiting: poolMetrics.engineWaiting.labels(model, url),
    };
    this.m.state.set(1);
  }

  outcome(o: Outcome): void {
    let c = this.m.outcomes.get(o);
    if (!c) {
      c = poolMetrics.requests.labels(this.model, this.url, o);
      this.m.outcomes.set(o, c);
    }
    c.inc();
  }

  dropMetrics(): void {
    const labels = { model: this.model, endpoint: this.url };
    poolMetrics.inflight.remove(labels);
    poolMetrics.state.remove(labels);
    poolMetrics.cooldowns.remove(labels);
    this.dropEngineMetrics();
  }

  /** The engine-reported gauges follow the last scrape: set when reported, absent when not. */
  engineMetrics(): void {
    const r = this.engine;
    if (r?.cacheHitRate != null) this.m.cacheHitRate.set(r.cacheHitRate);
    else poolMetrics.cacheHitRate.remove({ model: this.model, endpoint: this.url });
    if (r?.waiting != null) this.m.waiting.set(r.waiting);
    else poolMetrics.engineWaiting.remove({ model: this.model, endpoint: this.url });
  }

  private dropEngineMetrics(): void {
    const labels = { model: this.model, endpoint: this.url };
    poolMetrics.cacheHitRate.remove(labels);
    poolMetrics.engineWaiting.remove(labels);
  }
}

/** What the pool needs to know of a request to place it. */
export interface RouteRequest {
  /** Affinity key (AffinityKey / chatAffinityKey); without one prefix_affinity routes by load. */
  key?: number | undefined;
  /** Caller class for the wait queue (default community). */
  cls?: PriorityClass | undefined;
  /** Member id: members of one class take turns in the queue. */
  member?: string | undefined;
  /** Epoch ms past which waiting makes no sense. */
  deadline?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Endpoints already tried by this request (retries go elsewhere). */
  exclude?: ReadonlySet<Endpoint> | null | undefined;
  /**
   * Prompt characters no engine can have cached yet (a conversation's first turn: what follows its
   * system prompt), when that is known: a long one is placed where the least such prefill is pending.
   */
  cold?: number | undefined;
}

/** A request's hold on one endpoint slot; released exactly once with how it ended. */
export class Lease {
  private done = false;
  constructor(
    private readonly pool: EnginePool,
    readonly endpoint: Endpoint,
    /** Prompt characters this request adds to its endpoint's pending prefill until its first byte. */
    private cost = 0,
  ) {}

  /** The answer's first byte arrived: its prompt is prefilled. */
  started(): void {
    if (this.cost === 0) return;
    this.endpoint.prefilling -= this.cost;
    this.cost = 0;
  }

  release(outcome: Outcome, detail?: string): void {
    if (this.done) return;
    this.done = true;
    this.started();
    this.pool.settle(this.endpoint, outcome, detail);
  }
}

export interface PoolOptions {
  /** Catalog model id (metrics and messages). */
  model: string;
  log?: Logger | undefined;
  /** DNS lookup of `discovery.dns` (default: A + AAAA via node:dns). */
  resolver?: Resolver | undefined;
  /** Active probe of one endpoint (default: GET origin + health_path, 2 s, any 2xx). */
  probe?: ((e: Endpoint) => Promise<boolean>) | undefined;
  /**
   * The engine's Prometheus metrics path when the settings give no `metrics_path`: '/metrics' for
   * engines that serve vLLM's metrics (chat `openai` upstreams); default '' (not read).
   */
  defaultMetricsPath?: string | undefined;
  /** First cooldown after a failure; doubles per consecutive failure up to cooldownMaxMs. */
  cooldownMs?: number | undefined;
  cooldownMaxMs?: number | undefined;
  /** A recovered endpoint's share grows from 10 % to 100 % of max_inflight over this time. */
  warmupMs?: number | undefined;
  /** Bounded-load factor c of consistent hashing: an endpoint takes at most c x its fair share ... */
  loadBound?: number | undefined;
  /** ... or its fair share + this many requests, whichever is more (default ceil(sqrt(max_inflight))). */
  loadSlack?: number | undefined;
  random?: (() => number) | undefined;
}

interface Waiter extends Queued {
  req: RouteRequest;
  enqueued: number;
  resolve(l: Lease): void;
  reject(e: unknown): void;
  timer: NodeJS.Timeout | null;
  onAbort: (() => void) | null;
}

const DEFAULT_COOLDOWN_MS = 1_000;
const DEFAULT_COOLDOWN_MAX_MS = 30_000;
const DEFAULT_WARMUP_MS = 10_000;
const DEFAULT_LOAD_BOUND = 1.25;
/** A new prompt this long (characters, ~2,000 tokens) is placed by coldScore (pickRing, ADR 0062). */
const COLD_LONG = 8_192;
/** Moved keys a pool remembers (the oldest forgotten first). */
const MOVED_MAX = 10_000;
/** How fast a placed document stops counting: about a conversation's life (a few turns). */
const COLD_HALF_LIFE_MS = 10_000;
/** Long new prompts placed on an endpoint lately, decayed to `now`. */
function recentCold(e: Endpoint, now: number): number {
  return e.coldLoad ? e.coldLoad * 2 ** (-Math.max(0, now - e.coldAt) / COLD_HALF_LIFE_MS) : 0;
}
/** Long new prompts on an endpoint: prefilling now, plus placed lately. */
const coldScore = (e: Endpoint, now: number): number => e.prefilling + recentCold(e, now);
const PROBE_TIMEOUT_MS = 2_000;
const SCRAPE_TIMEOUT_MS = 2_000;

const pools = new Set<EnginePool>();

/** Where this process's pools send their moves (ADR 0062): the service's other replicas. */
type MoveSink = (model: string, key: number, url: string) => void;
const moveSinks = new Set<MoveSink>();

/** Passes every move a pool of this process makes to `sink`; returns the function that stops it. */
export function shareMoves(sink: MoveSink): () => void {
  moveSinks.add(sink);
  return () => moveSinks.delete(sink);
}

/** A move another replica made: every pool of `model` in this process remembers it too. */
export function learnMove(model: string, key: number, url: string): void {
  for (const p of pools) if (p.model === model) p.learnMove(key, url);
}

/**
 * ONE pool mechanism for every HTTP engine (chat upstreams, TEI, Whisper, image servers): the
 * endpoints of one model, where a request goes, what happens when an endpoint fails, and who waits when
 * all of them are full. In-process state only (each service replica has its own pool); the routing key
 * and the ring are the same in every replica, so they agree without talking (ADR 0060).
 *
 * - Endpoints: `base_url` (a pool of one), `endpoints` (static, weighted) or `discovery` (A/AAAA records
 *   re-read every `refresh_s`; an endpoint that disappears takes no new requests, one that stays keeps
 *   its health state).
 * - Routing per request, in microseconds and without allocation: round_robin (smooth weighted),
 *   least_loaded (power of two choices on in-flight / weight), prefix_affinity (consistent hashing with
 *   bounded loads on the prompt's affinity key; least_loaded without a key).
 * - Health: passive (connect errors, 5xx, timeouts, broken streams -> cooldown, 1 s doubling to 30 s)
 *   and active (a probe every `probe_interval_ms`; a cooled endpoint must pass a probe to come back); a
 *   recovered endpoint takes a growing share of `max_inflight_per_endpoint` over `warmupMs`.
 * - Engine metrics: with a `metrics_path` (chat `openai` upstreams: '/metrics'), the same timer reads
 *   each endpoint's vLLM or SGLang Prometheus metrics (prefix-cache hit rate over about the last minute,
 *   waiting and running requests, KV cache use) for the status and the pool's own metrics; a failed read
 *   means "not reported", never a cooldown.
 * - Saturation: every endpoint at its cap -> the request waits in a FairQueue (class order, members
 *   taking turns) for at most `queue_timeout_ms` (and its deadline), then 503 `overloaded` with
 *   Retry-After. No endpoint up at all -> 503 `service_unavailable` at once.
 */
export class EnginePool {
  readonly routing: RoutingPolicy;
  readonly maxInflight: number;
  readonly retries: number;
  readonly queueTimeoutMs: number;
  readonly resume: boolean;
  readonly tierPriority: boolean;
  private endpoints: Endpoint[] = [];
  private ring: HashRing = new HashRing([]);
  private totalInflight = 0;
  private stamp = 0;
  /** prefix_affinity's absolute slack over the fair share (see pickRing). */
  private readonly slack: number;
  /** prefix_affinity requests placed past their key's endpoint for load (status and metric). */
  private spills = 0;
  private readonly queue = new FairQueue<Waiter>();
  private readonly o: Required<Omit<PoolOptions, 'log' | 'defaultMetricsPath'>> & { log: Logger | undefined };
  /** Path of the engines' Prometheus metrics on their origin; '' = not read. */
  readonly metricsPath: string;
  /** One sample object, reused: a scrape parses and records it without awaiting in between. */
  private readonly sample = emptySample();
  private refreshTimer: NodeJS.Timeout | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private readonly cooldownTimers = new Set<NodeJS.Timeout>();
  private firstResolve: Promise<void> | null = null;
  private closed = false;
  private readonly queued;
  private readonly m;

  constructor(
    readonly settings: PoolSettings,
    opts: PoolOptions,
  ) {
    this.routing = settings.routing;
    this.maxInflight = settings.max_inflight_per_endpoint;
    this.retries = settings.retries;
    this.queueTimeoutMs = settings.queue_timeout_ms;
    this.resume = settings.resume;
    this.tierPriority = settings.tier_priority;
    this.o = {
      model: opts.model,
      log: opts.log,
      resolver: opts.resolver ?? resolveAddresses,
      probe: opts.probe ?? ((e) => httpProbe(e, settings.health_path)),
      cooldownMs: opts.cooldownMs ?? DEFAULT_COOLDOWN_MS,
      cooldownMaxMs: opts.cooldownMaxMs ?? DEFAULT_COOLDOWN_MAX_MS,
      warmupMs: opts.warmupMs ?? DEFAULT_WARMUP_MS,
      loadBound: opts.loadBound ?? DEFAULT_LOAD_BOUND,
      loadSlack: opts.loadSlack ?? Math.ceil(Math.sqrt(settings.max_inflight_per_endpoint)),
      random: opts.random ?? Math.random,
    };
    this.slack = this.o.loadSlack;
    this.queued = poolMetrics.queued.labels(opts.model);
    this.m = {
      retryBefore: poolMetrics.retries.labels(opts.model, 'before_first_byte'),
      resumed: poolMetrics.retries.labels(opts.model, 'resume'),
      overloaded: poolMetrics.rejected.labels(opts.model, 'overloaded'),
      unavailable: poolMetrics.rejected.labels(opts.model, 'unavailable'),
      spills: poolMetrics.spills.labels(opts.model),
    };
    if (settings.discovery) {
      this.firstResolve = this.refresh();
      this.refreshTimer = setInterval(() => void this.refresh(), settings.discovery.refresh_s * 1000);
      this.refreshTimer.unref();
    } else if (settings.endpoints) {
      this.setEndpoints(settings.endpoints);
    } else if (settings.base_url) {
      this.setEndpoints([{ url: settings.base_url, weight: 1 }]);
    }
    this.metricsPath = settings.metrics_path ?? opts.defaultMetricsPath ?? '';
    // One timer, off the request path: health probes and the engines' metrics.
    if (settings.probe_interval_ms > 0 && (settings.health_path || this.metricsPath)) {
      this.probeTimer = setInterval(() => {
        if (this.probesOn()) this.probeAll();
        if (this.metricsPath) this.scrapeAll();
      }, settings.probe_interval_ms);
      this.probeTimer.unref();
    }
    pools.add(this);
  }

  get model(): string {
    return this.o.model;
  }

  /** The endpoints now routed to (a copy). */
  list(): readonly Endpoint[] {
    return this.endpoints.slice();
  }

  /** Replaces the endpoint set; endpoints that stay keep their state and counters. */
  setEndpoints(list: ReadonlyArray<{ url: string; weight: number }>): void {
    const old = new Map(this.endpoints.map((e) => [e.url, e]));
    const next: Endpoint[] = [];
    for (const { url, weight } of list) {
      const clean = url.replace(/\/+$/, '');
      if (next.some((e) => e.url === clean)) continue;
      const kept = old.get(clean);
      old.delete(clean);
      next.push(kept && kept.weight === weight ? kept : new Endpoint(clean, weight, this.o.model));
    }
    for (const gone of old.values()) {
      gone.removed = true;
      gone.dropMetrics();
    }
    this.endpoints = next;
    this.ring = new HashRing(next);
    for (const e of next) e.current = 0;
    this.drain();
  }

  /** Re-reads the discovery name; a failed or empty lookup keeps the endpoints there are. */
  async refresh(): Promise<void> {
    const d = this.settings.discovery;
    if (!d || this.closed) return;
    try {
      const addresses = await this.o.resolver(d.dns);
      if (!addresses.length) {
        this.o.log?.warn({ dns: d.dns }, 'engine discovery found no address; keeping the endpoints known');
        return;
      }
      const urls = addresses.map((a) => ({ url: addressUrl(d.scheme, a, d.port, d.path), weight: 1 }));
      const same =
        urls.length === this.endpoints.length &&
        urls.every((u) => this.endpoints.some((e) => e.url === u.url));
      if (!same) {
        this.setEndpoints(urls);
        this.o.log?.info({ dns: d.dns, endpoints: urls.length }, 'engine endpoints discovered');
      }
    } catch (err) {
      this.o.log?.warn(
        { dns: d.dns, err: String(err) },
        'engine discovery failed; keeping the endpoints known',
      );
    }
  }

  /**
   * Takes a slot on an endpoint, waiting in the queue while every endpoint is saturated. Throws 503
   * `overloaded` (Retry-After) after the queue timeout, 503 `service_unavailable` when no endpoint is up
   * (or none is left that this request has not tried).
   */
  acquire(req: RouteRequest): Promise<Lease> {
    if (this.firstResolve && !this.endpoints.length) {
      const first = this.firstResolve;
      this.firstResolve = null;
      return first.then(() => this.acquire(req));
    }
    if (this.queue.size === 0) {
      const ep = this.pick(req, performance.now());
      if (ep) return Promise.resolve(this.grant(ep, req));
      if (!this.sawUp) return Promise.reject(this.unavailable());
    } else if (!this.anyUp(req.exclude)) {
      return Promise.reject(this.unavailable());
    }
    return this.wait(req);
  }

  /** A slot now or null (saturated or down): for callers that do not wait. */
  tryAcquire(req: RouteRequest): Lease | null {
    if (this.queue.size) return null;
    const ep = this.pick(req, performance.now());
    return ep ? this.grant(ep, req) : null;
  }

  /**
   * Runs `fn` on an endpoint; when it throws an EndpointFailure whose outcome is retryable, runs it on
   * another endpoint, up to `retries` times, within the request's deadline. For unary calls (the whole
   * answer arrives before anything reaches the client). Other errors are the request's: thrown as they
   * are, the endpoint counted healthy.
   */
  async call<T>(req: RouteRequest, fn: (e: Endpoint, attempt: number) => Promise<T>): Promise<T> {
    let tried: Set<Endpoint> | null = null;
    let last: EndpointFailure | null = null;
    for (let attempt = 0; ; attempt++) {
      let lease: Lease;
      try {
        lease = await this.acquire(tried ? { ...req, exclude: tried } : req);
      } catch (e) {
        throw last ? last.error : e;
      }
      try {
        const v = await fn(lease.endpoint, attempt);
        lease.release('ok');
        return v;
      } catch (e) {
        if (!(e instanceof EndpointFailure)) {
          lease.release(req.signal?.aborted ? 'aborted' : 'client_error');
          throw e;
        }
        lease.release(e.outcome, errorText(e.error));
        last = e;
        exhausted(e.error);
        const canRetry =
          RETRYABLE[e.outcome] &&
          attempt < this.retries &&
          !req.signal?.aborted &&
          Date.now() < (req.deadline ?? currentCaller()?.deadline ?? Infinity);
        if (!canRetry) throw e.error;
        this.m.retryBefore.inc();
        tried ??= new Set();
        tried.add(lease.endpoint);
      }
    }
  }

  /** Counts a retry before the first byte (engines that run their own loop: streams). */
  countRetry(kind: 'before_first_byte' | 'resume'): void {
    (kind === 'resume' ? this.m.resumed : this.m.retryBefore).inc();
  }

  /** Set by pick(): whether some endpoint was up (not cooling, not excluded) even if none was free. */
  private sawUp = false;

  /** Chooses an endpoint for `req` by the pool's routing, or null when none is free. */
  pick(req: RouteRequest, now: number): Endpoint | null {
    const eps = this.endpoints;
    this.sawUp = false;
    if (!eps.length) return null;
    if (this.routing === 'prefix_affinity' && req.key !== undefined) return this.pickRing(req, now);
    if (this.routing === 'round_robin') return this.pickRoundRobin(req, now);
    return this.pickLeastLoaded(req, now);
  }

  /** Slots an endpoint takes now: its cap, scaled down while it warms up after a cooldown. */
  private capOf(e: Endpoint, now: number): number {
    if (e.state === 'up') return this.maxInflight;
    if (e.state === 'cooling') return 0;
    const ramp = (now - e.recoverSince) / this.o.warmupMs;
    if (ramp >= 1) {
      e.state = 'up';
      e.m.state.set(1);
      return this.maxInflight;
    }
    return Math.max(1, Math.floor(this.maxInflight * Math.max(0.1, ramp)));
  }

  /** Free for this request: up (or warming with room), below its cap, not tried already. */
  private free(e: Endpoint, req: RouteRequest, now: number): boolean {
    if (e.state === 'cooling' || req.exclude?.has(e)) return false;
    this.sawUp = true;
    return e.inflight < this.capOf(e, now);
  }

  /**
   * Consistent hashing with bounded loads: walking the ring from the key, the first endpoint that is up,
   * below its cap and below its load bound takes the request; if none is, the least loaded one below its
   * cap. The bound is c x the endpoint's fair share of the requests in flight (+ this one), or the fair
   * share + `slack`, whichever is more: the relative bound keeps a hot key from piling onto one engine
   * at high load, while the slack (one standard deviation of a Poisson in-flight count at the cap,
   * sqrt(cap)) keeps the ordinary ups and downs of a few requests from moving a conversation off the
   * engine that caches it, which would cost its whole history's prefill elsewhere (ADR 0060).
   */
  private pickRing(req: RouteRequest, now: number): Endpoint | null {
    const eps = this.endpoints;
    const ring = this.ring;
    let upWeight = 0;
    for (const e of eps) if (e.state !== 'cooling') upWeight += e.weight;
    if (upWeight === 0) return null;
    const stamp = ++this.stamp;
    const total = this.totalInflight + 1;
    let home: Endpoint | null = null;
    let chosen: Endpoint | null = null;
    if (this.moved.size) {
      const m = this.moved.get(req.key as number);
      if (m) {
        // Gone or cooling: the key goes back to the ring for good; over its bound: for this request.
        if (m.removed || m.state === 'cooling') this.moved.delete(req.key as number);
        else if (!req.exclude?.has(m) && this.free(m, req, now)) {
          if (this.underBound(m, total, upWeight)) return m;
        }
      }
    }
    let spill: Endpoint | null = null;
    let seen = 0;
    const size = ring.size;
    for (let i = ring.start(req.key as number), steps = 0; steps < size && seen < eps.length; steps++) {
      const e = eps[ring.owners[i] as number] as Endpoint;
      i = i + 1 === size ? 0 : i + 1;
      if (e.stamp === stamp) continue;
      e.stamp = stamp;
      seen++;
      if (e.state === 'cooling' || req.exclude?.has(e)) continue;
      // The key's endpoint: the first one on the ring this request may use.
      home ??= e;
      if (!this.free(e, req, now)) continue;
      if (this.underBound(e, total, upWeight)) {
        chosen = e;
        break;
      }
      if (!spill || e.inflight / e.weight < spill.inflight / spill.weight) spill = e;
    }
    chosen ??= spill;
    if (chosen && (req.cold ?? 0) >= COLD_LONG) {
      // A long new prompt (a document) is cached nowhere yet, so its place is free to choose: the
      // endpoint under its load bound with the least long new prompts pending and placed lately (its
      // ring endpoint on a tie) takes it, so documents neither queue behind each other's prefill nor
      // crowd one engine's cache. A move is remembered (and shared with the other replicas) so that the
      // conversation's later turns find their cache (ADR 0062).
      let best = chosen;
      let bestScore = coldScore(chosen, now);
      for (const e of eps) {
        if (e === chosen || e.state === 'cooling' || req.exclude?.has(e) || !this.free(e, req, now)) continue;
        if (!this.underBound(e, total, upWeight)) continue;
        const score = coldScore(e, now);
        if (score < bestScore) {
          best = e;
          bestScore = score;
        }
      }
      if (best !== chosen) {
        chosen = best;
        this.remember(req.key as number, best);
      }
    }
    if (chosen && chosen !== home) {
      this.spills++;
      this.m.spills.inc();
    }
    return chosen;
  }

  /**
   * prefix_affinity's load bound: below max(c x its fair share, fair share + slack) of `total` requests
   * in flight (this one included), the share by weight among the endpoints that are up (ADR 0061).
   */
  private underBound(e: Endpoint, total: number, upWeight: number): boolean {
    const share = (total * e.weight) / upWeight;
    return e.inflight < Math.max(Math.ceil(this.o.loadBound * share), Math.floor(share) + this.slack);
  }

  /**
   * Keys whose first turn was placed off the ring for its prefill, and where (this pool's moves and
   * those the service's other replicas shared): requests of such a key go there while it is up and
   * under its bound (the oldest forgotten past MOVED_MAX).
   */
  private readonly moved = new Map<number, Endpoint>();

  private remember(key: number, e: Endpoint): void {
    this.keep(key, e);
    for (const sink of moveSinks) sink(this.o.model, key, e.url);
  }

  /** A move made by another replica of this service (shareMoves): remembered, not passed on. */
  learnMove(key: number, url: string): void {
    const e = this.endpoints.find((x) => x.url === url);
    if (e) this.keep(key, e);
  }

  private keep(key: number, e: Endpoint): void {
    this.moved.delete(key);
    this.moved.set(key, e);
    if (this.moved.size > MOVED_MAX) this.moved.delete(this.moved.keys().next().value as number);
  }

  private pickLeastLoaded(req: RouteRequest, now: number): Endpoint | null {
    const eps = this.endpoints;
    const n = eps.length;
    if (n > 1) {
      // Power of two choices: two distinct random endpoints, the less loaded one (per unit of weight).
      const r = this.o.random;
      const a = eps[Math.floor(r() * n)] as Endpoint;
      let b = eps[Math.floor(r() * (n - 1))] as Endpoint;
      if (b === a) b = eps[n - 1] as Endpoint;
      const fa = this.free(a, req, now);
      const fb = this.free(b, req, now);
      if (fa && fb) return a.inflight / a.weight <= b.inflight / b.weight ? a : b;
      if (fa) return a;
      if (fb) return b;
    }
    // Neither sampled endpoint is free: the least loaded free one, if any.
    let best: Endpoint | null = null;
    for (const e of eps) {
      if (this.free(e, req, now) && (!best || e.inflight / e.weight < best.inflight / best.weight)) best = e;
    }
    return best;
  }

  private pickRoundRobin(req: RouteRequest, now: number): Endpoint | null {
    // Smooth weighted round robin (nginx): each free endpoint gains its weight, the largest is chosen
    // and pays back the total.
    let best: Endpoint | null = null;
    let total = 0;
    for (const e of this.endpoints) {
      if (!this.free(e, req, now)) continue;
      e.current += e.weight;
      total += e.weight;
      if (!best || e.current > best.current) best = e;
    }
    if (best) best.current -= total;
    return best;
  }

  private anyUp(exclude: ReadonlySet<Endpoint> | null | undefined): boolean {
    for (const e of this.endpoints) if (e.state !== 'cooling' && !exclude?.has(e)) return true;
    return false;
  }

  private grant(e: Endpoint, req: RouteRequest): Lease {
    e.inflight++;
    this.totalInflight++;
    e.m.inflight.inc();
    const cost = req.cold ?? 0;
    e.prefilling += cost;
    if (cost >= COLD_LONG) {
      const now = performance.now();
      e.coldLoad = recentCold(e, now) + cost;
      e.coldAt = now;
    }
    return new Lease(this, e, cost);
  }

  private wait(req: RouteRequest): Promise<Lease> {
    const now = Date.now();
    // Engines that do not pass the caller (embeddings, audio, images) get it from the RPC handler's
    // context (@infer/rpc withCaller).
    const caller = req.cls === undefined || req.member === undefined ? currentCaller() : undefined;
    const deadline = req.deadline ?? caller?.deadline;
    const left = Math.min(this.queueTimeoutMs, deadline === undefined ? Infinity : deadline - now);
    if (left <= 0) return Promise.reject(this.overloaded());
    return new Promise<Lease>((resolve, reject) => {
      const w: Waiter = {
        cls: req.cls ?? caller?.cls ?? 'community',
        member: req.member ?? caller?.member ?? '',
        gone: false,
        req,
        enqueued: performance.now(),
        resolve,
        reject,
        timer: null,
        onAbort: null,
      };
      w.timer = setTimeout(() => {
        this.queue.remove(w);
        this.queued.set(this.queue.size);
        w.onAbort && req.signal?.removeEventListener('abort', w.onAbort);
        reject(this.overloaded());
      }, left);
      if (req.signal) {
        w.onAbort = () => {
          this.queue.remove(w);
          this.queued.set(this.queue.size);
          if (w.timer) clearTimeout(w.timer);
          reject(req.signal?.reason);
        };
        req.signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.queue.push(w);
      this.queued.set(this.queue.size);
    });
  }

  /** Gives free slots to the waiting requests, in queue order. */
  private drain(): void {
    while (this.queue.size) {
      const w = this.queue.peek();
      if (!w) break;
      const ep = this.pick(w.req, performance.now());
      if (!ep) {
        if (this.sawUp) break;
        // Nothing left up for this request: it fails now rather than at its timeout.
        this.queue.shift();
        this.finishWait(w);
        w.reject(this.unavailable());
        continue;
      }
      this.queue.shift();
      this.finishWait(w);
      poolMetrics.queueWait.observe(
        { model: this.o.model, class: w.cls },
        (performance.now() - w.enqueued) / 1000,
      );
      w.resolve(this.grant(ep, w.req));
    }
    this.queued.set(this.queue.size);
  }

  private finishWait(w: Waiter): void {
    if (w.timer) clearTimeout(w.timer);
    if (w.onAbort) w.req.signal?.removeEventListener('abort', w.onAbort);
  }

  /** Called by Lease.release(). */
  settle(e: Endpoint, outcome: Outcome, detail?: string): void {
    e.inflight--;
    this.totalInflight--;
    e.m.inflight.dec();
    e.requests++;
    e.outcome(outcome);
    // A 5xx is an answer from a live server: it cools an endpoint only where another one can take its
    // share (a pool of one keeps sending; its connect errors and timeouts still cool it).
    if (COOLS[outcome] && (outcome !== 'status_5xx' || this.endpoints.length > 1))
      this.fail(e, outcome, detail);
    else if (COOLS[outcome]) e.errors++;
    else if (outcome === 'ok' || outcome === 'client_error') e.fails = 0;
    this.drain();
  }

  /** Puts an endpoint in a cooldown (1 s, doubling per consecutive failure, at most 30 s). */
  fail(e: Endpoint, why: string, detail?: string): void {
    e.errors++;
    e.lastError = detail ? `${why}: ${detail}` : why;
    e.lastErrorAt = Date.now();
    if (e.state === 'cooling' || e.removed || this.closed) return;
    e.fails++;
    const ms = Math.min(this.o.cooldownMaxMs, this.o.cooldownMs * 2 ** Math.min(e.fails - 1, 20));
    e.state = 'cooling';
    e.coolUntil = Date.now() + ms;
    e.m.state.set(0);
    e.m.cooldowns.inc();
    this.o.log?.warn({ endpoint: e.url, why, cooldown_ms: ms }, 'engine endpoint cooling down');
    const t = setTimeout(() => {
      this.cooldownTimers.delete(t);
      void this.afterCooldown(e);
    }, ms);
    t.unref();
    this.cooldownTimers.add(t);
  }

  /** End of a cooldown: with probes on, the endpoint must pass one before it takes traffic again. */
  private async afterCooldown(e: Endpoint): Promise<void> {
    if (e.removed || this.closed) return;
    if (this.probesOn()) {
      const ok = await this.probeOne(e);
      if (e.removed || this.closed) return;
      if (!ok) {
        e.state = 'up'; // so fail() starts the next, longer cooldown
        this.fail(e, 'probe');
        return;
      }
    }
    e.state = 'recovering';
    e.recoverSince = performance.now();
    e.m.state.set(0.5);
    this.o.log?.info({ endpoint: e.url }, 'engine endpoint recovering');
    this.drain();
  }

  private probesOn(): boolean {
    return this.settings.probe_interval_ms > 0 && this.settings.health_path !== '';
  }

  private async probeOne(e: Endpoint): Promise<boolean> {
    try {
      return await this.o.probe(e);
    } catch {
      return false;
    }
  }

  /** Active health: every endpoint that takes traffic is probed; a failed probe cools it down. */
  private probeAll(): void {
    for (const e of this.endpoints) {
      if (e.state === 'cooling' || e.probing) continue;
      e.probing = true;
      void this.probeOne(e).then((ok) => {
        e.probing = false;
        if (!ok && !e.removed && !this.closed) this.fail(e, 'probe');
      });
    }
  }

  /**
   * Reads every endpoint's engine metrics (prefix-cache hit rate, queue, KV cache). A failed or absent
   * /metrics means "not reported": never a cooldown, one log line per endpoint the first time.
   */
  private scrapeAll(): void {
    for (const e of this.endpoints) {
      if (e.scraping) continue;
      e.scraping = true;
      void this.scrapeOne(e).finally(() => {
        e.scraping = false;
      });
    }
  }

  private async scrapeOne(e: Endpoint): Promise<void> {
    let text: string | null = null;
    let why = '';
    try {
      const res = await fetch(`${e.origin}${this.metricsPath}`, {
        signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS),
      });
      if (res.ok) text = await res.text();
      else {
        why = `HTTP ${res.status}`;
        await res.body?.cancel();
      }
    } catch (err) {
      why = errorText(err);
    }
    if (e.removed || this.closed) return;
    // Parsed and recorded in one go (the sample object is shared by the pool's endpoints).
    if (text !== null && parseEngineMetrics(text, this.sample)) {
      e.engine ??= new EngineReport();
      e.engine.record(this.sample, Date.now());
    } else {
      e.engine?.clear();
      if (!e.scrapeLogged) {
        e.scrapeLogged = true;
        this.o.log?.info(
          { endpoint: e.url, path: this.metricsPath, why: why || 'no vLLM metrics' },
          'engine metrics not reported (cache hit rate shown as not reported)',
        );
      }
    }
    e.engineMetrics();
  }

  private unavailable(): ApiError {
    this.m.unavailable.inc();
    let soonest = Infinity;
    for (const e of this.endpoints) if (e.state === 'cooling') soonest = Math.min(soonest, e.coolUntil);
    const s = Number.isFinite(soonest) ? Math.ceil((soonest - Date.now()) / 1000) : 1;
    return new ApiError(
      503,
      `No server of the model '${this.o.model}' is reachable right now; retry later.`,
      {
        type: 'server_error',
        code: 'service_unavailable',
        headers: { 'retry-after': String(Math.min(30, Math.max(1, s))) },
      },
    );
  }

  private overloaded(): ApiError {
    this.m.overloaded.inc();
    return ApiError.overloaded(
      Math.min(60, Math.max(1, this.queueTimeoutMs / 1000)),
      `The model '${this.o.model}' is overloaded: every server is busy; retry later.`,
    );
  }

  /** State for operators (the console's Models page): read on demand, never on the request path. */
  status(): PoolStatus {
    const now = performance.now();
    return {
      model: this.o.model,
      routing: this.routing,
      source: this.settings.discovery ? 'dns' : this.settings.endpoints ? 'static' : 'base_url',
      max_inflight_per_endpoint: this.maxInflight,
      queued: this.queue.depthByClass(),
      affinity_spills: this.spills,
      endpoints: this.endpoints.map((e) => ({
        url: e.url,
        weight: e.weight,
        state: e.state,
        inflight: e.inflight,
        capacity: this.capOf(e, now),
        consecutive_failures: e.fails,
        cooldown_until: e.state === 'cooling' ? new Date(e.coolUntil).toISOString() : null,
        requests: e.requests,
        errors: e.errors,
        last_error: e.lastError,
        last_error_at: e.lastErrorAt ? new Date(e.lastErrorAt).toISOString() : null,
        cache_hit_rate: e.engine?.cacheHitRate ?? null,
        kv_cache_usage: e.engine?.kvUsage ?? null,
        requests_waiting: e.engine?.waiting ?? null,
        requests_running: e.engine?.running ?? null,
        metrics_at: e.engine?.at ? new Date(e.engine.at).toISOString() : null,
      })),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    pools.delete(this);
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    if (this.probeTimer) clearInterval(this.probeTimer);
    for (const t of this.cooldownTimers) clearTimeout(t);
    this.cooldownTimers.clear();
    for (let w = this.queue.shift(); w; w = this.queue.shift()) {
      this.finishWait(w);
      w.reject(this.unavailable());
    }
    this.queued.set(0);
    for (const e of this.endpoints) e.dropMetrics();
  }
}

export interface EndpointStatus {
  url: string;
  weight: number;
  state: EndpointState;
  inflight: number;
  capacity: number;
  consecutive_failures: number;
  cooldown_until: string | null;
  requests: number;
  errors: number;
  last_error: string | null;
  last_error_at: string | null;
  /**
   * Reported by the engine on its /metrics (`metrics_path`), null when it reports nothing: the
   * prefix-cache hit rate over about the last minute (0..1), KV cache in use (0..1), requests its
   * scheduler has waiting and running, and when this was read (ISO).
   */
  cache_hit_rate: number | null;
  kv_cache_usage: number | null;
  requests_waiting: number | null;
  requests_running: number | null;
  metrics_at: string | null;
}

export interface PoolStatus {
  model: string;
  routing: RoutingPolicy;
  source: 'dns' | 'static' | 'base_url';
  max_inflight_per_endpoint: number;
  queued: Record<PriorityClass, number>;
  /** prefix_affinity requests placed on another endpoint than their key's because it was too loaded. */
  affinity_spills: number;
  endpoints: EndpointStatus[];
}

/** Every live pool of this process (a service's engines), for the ops status endpoint. */
export function enginePoolStatus(): PoolStatus[] {
  return [...pools].map((p) => p.status());
}

// Served by every service's ops server as GET /status/engine-pools (the console's Models page).
registerOpsStatus('engine-pools', () => ({ pools: enginePoolStatus() }));

/** vLLM's request `priority` (lower runs first) of a caller class. */
export function vllmPriority(cls: PriorityClass | undefined): number {
  return CLASS_RANK[cls ?? 'community'];
}

const EXHAUSTED = new WeakSet<object>();

/** Marks the error of a request that every endpoint it could try has failed (a reason to fall back). */
export function exhausted<E>(e: E): E {
  if (e && typeof e === 'object') EXHAUSTED.add(e);
  return e;
}

/**
 * Whether a model's failure lets the request go to a fallback model: no endpoint could take it (503
 * `overloaded` or `service_unavailable`, or every endpoint tried failed). Errors of the request itself
 * (4xx) never do.
 */
export function wantsFallback(e: unknown): boolean {
  if (e instanceof ApiError && e.status === 503)
    return e.code === 'overloaded' || e.code === 'service_unavailable';
  return typeof e === 'object' && e !== null && EXHAUSTED.has(e);
}

/** A short text of an error for the endpoint status (`last_error`). */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message.slice(0, 200) : String(e).slice(0, 200);
}

async function httpProbe(e: Endpoint, path: string): Promise<boolean> {
  const res = await fetch(`${e.origin}${path}`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  await res.body?.cancel();
  return res.ok;
}

/**
 * The outcome of a failed HTTP call to an endpoint (undici/fetch errors): a timeout, a connection that
 * never opened (refused, DNS), or one that broke.
 */
export function networkOutcome(e: unknown, timedOut: boolean): Outcome {
  if (timedOut) return 'timeout';
  const err = e as { code?: string; cause?: { code?: string } };
  const code = err?.code ?? err?.cause?.code ?? '';
  if (code.includes('TIMEOUT')) return 'timeout';
  return 'connect';
}

/** The outcome of an HTTP status from an endpoint. */
export function statusOutcome(status: number): Outcome {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 408 || status === 429) return 'busy';
  if (status >= 500) return 'status_5xx';
  return 'client_error';
}
