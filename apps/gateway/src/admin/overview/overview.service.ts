import { type Overview, Queues, StatusSubjects } from '@infer/contracts';
import { StatusPublisher, serviceVersion } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { readTraffic, TrafficRecorder } from '../../call/observers/traffic.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { BullQueues } from '../../infra/bull-queues.service.js';
import { LOGGER, NATS, REDIS } from '../../infra/tokens.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { InstanceRegistry } from './instances.js';

const utf8 = new TextDecoder();

/**
 * The console's live overview, the same on every gateway replica: traffic per model and minute from
 * Redis (TrafficRecorder, written by every replica), instances from their NATS status messages,
 * queue depths from BullMQ, the ledger's lag from its JetStream consumer. One overview is computed
 * at most once a second per replica, however many consoles watch.
 */
@Injectable()
export class OverviewService implements OnModuleInit, OnApplicationShutdown {
  readonly instances = new InstanceRegistry();
  private sub: Subscription | null = null;
  private status: StatusPublisher | null = null;
  private cached: { minutes: number; at: number; value: Promise<Overview> } | null = null;
  private ledgerCache: { at: number; value: Promise<Overview['ledger']> } | null = null;

  constructor(
    @Inject(TrafficRecorder) private readonly recorder: TrafficRecorder,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(NATS) private readonly nc: NatsConnection,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(MetricsService) private readonly metrics: MetricsService,
    @Inject(BullQueues) private readonly bull: BullQueues,
  ) {}

  onModuleInit(): void {
    this.recorder.start();
    const prefix = this.config.MODEL_SUBJECT_PREFIX;
    this.sub = this.nc.subscribe(prefix + StatusSubjects.all, {
      callback: (err, msg) => {
        if (err) return;
        try {
          this.instances.receive(JSON.parse(utf8.decode(msg.data)));
        } catch {
          // not JSON: ignored
        }
      },
    });
    this.status = new StatusPublisher(this.nc, {
      service: 'gateway',
      inflight: () => this.metrics.inflight,
      version: serviceVersion({ SERVICE_VERSION: this.config.SERVICE_VERSION }),
      subjectPrefix: prefix,
      log: this.log,
    });
    this.status.start();
    // Everyone else announces itself now, not at their next interval.
    this.nc.publish(prefix + StatusSubjects.ping);
  }

  async onApplicationShutdown(): Promise<void> {
    this.status?.stop();
    try {
      this.sub?.unsubscribe();
    } catch {
      // already closed
    }
    await this.recorder.stop();
  }

  overview(minutes: number): Promise<Overview> {
    const now = Date.now();
    if (this.cached && this.cached.minutes === minutes && now - this.cached.at < 1000)
      return this.cached.value;
    const value = this.compute(minutes, now);
    this.cached = { minutes, at: now, value };
    value.catch(() => {
      if (this.cached?.value === value) this.cached = null;
    });
    return value;
  }

  private async compute(minutes: number, now: number): Promise<Overview> {
    const [traffic, queues, ledger] = await Promise.all([
      readTraffic(this.redis, this.config.CONSOLE_REDIS_PREFIX, minutes, now),
      this.queues(),
      this.ledger(),
    ]);
    // This replica's own figure is read now, not from its last status message (up to 5 s old).
    const self = this.status?.instance;
    const instances = this.instances
      .list()
      .map((i) => (i.instance === self ? { ...i, inflight: this.metrics.inflight, last_seen_ms: 0 } : i));
    const n = traffic.minuteStarts.length;
    const reqPerMin = new Array<number>(n).fill(0);
    const errPerMin = new Array<number>(n).fill(0);
    const refPerMin = new Array<number>(n).fill(0);
    const srvPerMin = new Array<number>(n).fill(0);
    for (const m of traffic.models) {
      for (let i = 0; i < n; i++) {
        reqPerMin[i] = (reqPerMin[i] as number) + (m.requests_per_min[i] ?? 0);
        errPerMin[i] = (errPerMin[i] as number) + (m.errors_per_min[i] ?? 0);
        refPerMin[i] = (refPerMin[i] as number) + (m.refusals_per_min[i] ?? 0);
        srvPerMin[i] = (srvPerMin[i] as number) + (m.server_errors_per_min[i] ?? 0);
      }
    }
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const requests = sum(reqPerMin);
    const errors = sum(errPerMin);
    const refusals = sum(refPerMin);
    const serverErrors = sum(srvPerMin);
    const clientErrors = errors - refusals - serverErrors;
    const rate = (x: number) => (requests ? x / requests : null);
    // The last full minute (the current one is still filling).
    const lastFull = n >= 2 ? (reqPerMin[n - 2] as number) : 0;
    return {
      object: 'overview',
      at: now,
      minutes,
      minute_starts: traffic.minuteStarts,
      totals: {
        requests,
        errors,
        tokens: traffic.models.reduce((a, m) => a + m.tokens, 0),
        requests_per_s: Math.round((lastFull / 60) * 100) / 100,
        error_rate: rate(errors),
        client_error_rate: rate(clientErrors),
        refusal_rate: rate(refusals),
        server_error_rate: rate(serverErrors),
        requests_per_min: reqPerMin,
        errors_per_min: errPerMin,
        client_errors_per_min: errPerMin.map((e, i) => e - (refPerMin[i] ?? 0) - (srvPerMin[i] ?? 0)),
        refusals_per_min: refPerMin,
        server_errors_per_min: srvPerMin,
      },
      models: traffic.models.map((m) => ({
        model: m.model,
        requests: m.requests,
        errors: m.errors,
        tokens: m.tokens,
        p50_ms: m.p50_ms,
        p99_ms: m.p99_ms,
        requests_per_min: m.requests_per_min,
        tokens_per_min: m.tokens_per_min,
        p50_per_min: m.p50_per_min,
        p99_per_min: m.p99_per_min,
      })),
      inflight: instances.filter((i) => i.service === 'gateway').reduce((a, i) => a + i.inflight, 0),
      instances,
      queues,
      ledger,
    };
  }

  private queues(): Promise<Overview['queues']> {
    return Promise.all(
      Object.values(Queues).map(async (name) => {
        const q = await this.bull.get(name);
        const [counts, paused] = await Promise.all([
          q.getJobCounts('waiting', 'active', 'delayed', 'failed'),
          q.isPaused(),
        ]);
        return { name, paused, counts };
      }),
    );
  }

  /** The ledger writer's consumer: events not yet delivered, delivered and not acked, oldest age. */
  private ledger(): Promise<Overview['ledger']> {
    const now = Date.now();
    if (this.ledgerCache && now - this.ledgerCache.at < 2000) return this.ledgerCache.value;
    const value = (async (): Promise<Overview['ledger']> => {
      try {
        const jsm = await jetstreamManager(this.nc, { timeout: 2000 });
        const stream = this.config.USAGE_STREAM;
        const info = await jsm.consumers.info(stream, this.config.LEDGER_CONSUMER);
        let oldest: number | null = null;
        if (info.num_pending + info.num_ack_pending > 0) {
          const msg = await jsm.streams
            .getMessage(stream, { seq: info.ack_floor.stream_seq + 1 })
            .catch(() => null);
          if (msg) oldest = Math.max(0, now - +msg.time);
        }
        return {
          pending: info.num_pending,
          ack_pending: info.num_ack_pending,
          oldest_ms: oldest,
          error: null,
        };
      } catch (err) {
        const message = String((err as Error)?.message ?? err);
        return {
          pending: null,
          ack_pending: null,
          oldest_ms: null,
          error: /consumer not found/i.test(message)
            ? 'No ledger writer has consumed the usage stream yet.'
            : /stream not found/i.test(message)
              ? 'The usage stream does not exist yet.'
              : 'JetStream did not answer.',
        };
      }
    })();
    this.ledgerCache = { at: now, value };
    return value;
  }
}
