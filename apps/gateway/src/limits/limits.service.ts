import type { CatalogEntry, LimitState, LimitsOverride, ModelLimits, Tier } from '@infer/contracts';
import type { SqlRunner } from '@infer/persistence/lazy';
import { inSampledTrace, type Logger, withSpan } from '@infer/telemetry';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Counter, Gauge } from 'prom-client';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER, PG, REDIS } from '../infra/tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { AlertRecorder } from './alert-recorder.js';
import { sqlLedgerSource } from './ledger-source.js';
import { type Admission, LimitsStore } from './limits.store.js';
import { loadLimitsFile } from './limits-file.js';
import type { LimitSubject } from './plan.js';

export type { Admission, LimitSubject };

/**
 * The gateway's limits, for every route that needs them. A route admits a request before doing the
 * work and settles the admission exactly once when the request ends, however it ends:
 *
 *   const adm = await limits.admitSearch(req.auth);   // throws the 429 ApiError (with Retry-After)
 *   try { ... } finally { void adm.release(); }
 *
 * Model routes get this from ModelGateway (admitModel after the model is resolved, settle with the
 * real usage). `adm.headers` holds the x-ratelimit-* headers to send.
 */
@Injectable()
export class LimitsService implements OnModuleInit, OnApplicationShutdown {
  readonly store: LimitsStore;

  constructor(
    @Inject(REDIS) redis: Redis,
    @Inject(PG) pg: SqlRunner,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(LOGGER) log: Logger,
    @Inject(MetricsService) metrics: MetricsService,
  ) {
    const refusals = new Counter({
      name: 'gateway_limits_refusals_total',
      help: 'Requests refused by a limit (429/402), by limit name (model-specific limits without the model id)',
      labelNames: ['limit', 'status'] as const,
      registers: [metrics.registry],
    });
    const rebuilds = new Counter({
      name: 'gateway_limits_counter_rebuilds_total',
      help: 'Quota counters missing in Redis (new period or lost data) rebuilt from the usage ledger',
      labelNames: ['limit'] as const,
      registers: [metrics.registry],
    });
    const alerts = new AlertRecorder(pg, log);
    this.store = new LimitsStore({
      on: {
        refused: (limit, status) => refusals.inc({ limit, status: String(status) }),
        rebuilt: (limit) => rebuilds.inc({ limit }),
        ...(config.ALERT_THRESHOLDS.length ? { threshold: (t) => alerts.record(t) } : {}),
      },
      alertThresholds: config.ALERT_THRESHOLDS,
      redis,
      ledger: sqlLedgerSource(pg),
      log,
      file: loadLimitsFile(config.LIMITS_FILE),
      enabled: config.LIMITS_ENABLED,
      prefix: config.LIMITS_REDIS_PREFIX,
    });
    const store = this.store;
    new Gauge({
      name: 'gateway_limits_held_admissions',
      help: 'Requests of this replica holding concurrency slots (renewed leases)',
      registers: [metrics.registry],
      collect() {
        this.set(store.activeCount);
      },
    });
  }

  /**
   * What a tier gives without overrides (defaults < limits file < its tier section), for the models it
   * reaches, each model's allowance from the catalog where the limits do not set one: the console's
   * "inherited from tier".
   */
  tierLimits(tier: Tier, models: readonly CatalogEntry[]): LimitsOverride {
    const l = this.store.limitsFor({ tier, overrides: null });
    const byModel: Record<string, ModelLimits> = {};
    for (const m of models) {
      const own = l.models[m.id] ?? {};
      byModel[m.id] =
        own.allowance_tokens === undefined && m.allowance
          ? { ...own, allowance_tokens: m.allowance.tokens }
          : { ...own };
    }
    return { key: l.key, models: byModel, search: l.search, images: l.images, budget: l.budget };
  }

  get enabled(): boolean {
    return this.store.enabled;
  }

  onModuleInit(): void {
    this.store.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.stop();
  }

  /** For tests: the clock the limits read (epoch ms). Every replica of a test must get the same. */
  setClock(clock: () => number): void {
    this.store.clock = clock;
  }

  /**
   * A `limits.admit` span only where there is an admission to time: with limits off the store answers
   * at once, and a sampled request's tracing work stays that of its own spans (bench/telemetry.ts runs
   * limits off).
   */
  private timed(): boolean {
    return this.store.enabled && inSampledTrace();
  }

  /** A request to a model endpoint, once its model is resolved. */
  admitModel(auth: LimitSubject, model: CatalogEntry, body: unknown): Promise<Admission> {
    if (this.timed()) {
      return withSpan('limits.admit', { 'infer.limits.kind': 'model', 'infer.tier': auth.tier }, () =>
        this.store.admitModel(auth, model, body),
      );
    }
    return this.store.admitModel(auth, model, body);
  }

  /** One web search or MCP tool call: 20/min, 3 concurrent (429 rate_limit_exceeded), 500/day (429 insufficient_quota). */
  admitSearch(auth: LimitSubject, cost = 0): Promise<Admission> {
    if (this.timed()) {
      return withSpan('limits.admit', { 'infer.limits.kind': 'search' }, () =>
        this.store.admitSearch(auth, cost),
      );
    }
    return this.store.admitSearch(auth, cost);
  }

  /** One image request (whatever `n`): 20/min and 100/month per member, 429. */
  admitImages(auth: LimitSubject): Promise<Admission> {
    if (this.timed()) {
      return withSpan('limits.admit', { 'infer.limits.kind': 'images' }, () => this.store.admitImages(auth));
    }
    return this.store.admitImages(auth);
  }

  state(
    auth: LimitSubject,
    models: readonly CatalogEntry[],
    only?: (limit: Pick<LimitState, 'scope' | 'window'>) => boolean,
  ): Promise<LimitState[]> {
    return this.store.state(auth, models, only);
  }
}
