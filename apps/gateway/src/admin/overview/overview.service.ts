import { ALERT_RULES, type Overview, Queues, StatusSubjects } from '@infer/contracts';
import { StatusPublisher, serviceVersion } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { readTraffic, TrafficRecorder } from '../../call/observers/traffic.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { BackingChecks, type BackingState } from '../../health/backing.service.js';
import { BullQueues } from '../../infra/bull-queues.service.js';
import { LOGGER, NATS, REDIS } from '../../infra/tokens.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { AlertEvaluator, type AlertView } from './alert-eval.js';
import { AlertmanagerReader } from './alertmanager.js';
import { InstanceRegistry, type InstanceView } from './instances.js';

const utf8 = new TextDecoder();
/** How often the alert rules are evaluated when no console asks (Prometheus's default interval is 15 s to 1 min). */
const EVAL_EVERY_MS = 15_000;
const NOT_EVALUATED = ALERT_RULES.filter((r) => !r.evaluated).map((r) => r.alert);
const BACKING_NAMES = { postgresql: 'PostgreSQL', redis: 'Redis', nats: 'NATS' } as const;

/**
 * The console's live overview, the same on every gateway replica: traffic per model and minute from
 * Redis (TrafficRecorder, written by every replica), instances from their NATS status messages,
 * queue depths from BullMQ, the ledger's lag from its JetStream consumer. One overview is computed
 * at most once a second per replica, however many consoles watch. With it, the platform's health:
 * the backing servers as this replica reaches them, every instance's state (from the readiness its
 * status messages carry) and the alerts of the shipped PrometheusRule, evaluated here every 15 s
 * whether or not a console watches (or read from Alertmanager when ALERTMANAGER_URL is set).
 */
@Injectable()
export class OverviewService implements OnModuleInit, OnApplicationShutdown {
  readonly instances = new InstanceRegistry();
  private sub: Subscription | null = null;
  private status: StatusPublisher | null = null;
  private cached: { minutes: number; at: number; value: Promise<Overview> } | null = null;
  private ledgerCache: { at: number; value: Promise<Overview['ledger']> } | null = null;
  private readonly evaluator: AlertEvaluator;
  private readonly alertmanager: AlertmanagerReader | null;
  private lastAlerts: AlertView[] = [];
  private evalTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(TrafficRecorder) private readonly recorder: TrafficRecorder,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(NATS) private readonly nc: NatsConnection,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(MetricsService) private readonly metrics: MetricsService,
    @Inject(BullQueues) private readonly bull: BullQueues,
    @Inject(BackingChecks) private readonly backing: BackingChecks,
  ) {
    this.evaluator = new AlertEvaluator(config.CONSOLE_ALERTS_FOR_S);
    this.alertmanager = config.ALERTMANAGER_URL ? new AlertmanagerReader(config.ALERTMANAGER_URL) : null;
  }

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
      // What its /readyz says: PostgreSQL, Redis and NATS reached within 1 s.
      readiness: async () => {
        const states = await this.backing.check();
        return {
          ready: states.every((b) => b.up),
          checks: Object.fromEntries(states.map((b) => [b.name, b.up])),
        };
      },
    });
    this.status.start();
    // The rules' `for` counts from their first evaluation: evaluate whether or not a console watches.
    this.evalTimer = setInterval(() => {
      this.overview(5).catch(() => undefined);
    }, EVAL_EVERY_MS);
    this.evalTimer.unref();
    // Everyone else announces itself now, not at their next interval.
    this.nc.publish(prefix + StatusSubjects.ping);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.evalTimer) clearInterval(this.evalTimer);
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
    const [traffic, queues, ledger, backingStates] = await Promise.all([
      readTraffic(this.redis, this.config.CONSOLE_REDIS_PREFIX, minutes, now),
      this.queues(),
      this.ledger(),
      this.backing.check(),
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
    const evaluated = this.evaluator.evaluate({
      requests_per_min: reqPerMin,
      server_errors_per_min: srvPerMin,
      models: traffic.models,
      instances,
      queues,
      ledger_pending: ledger.pending,
    });
    this.lastAlerts = evaluated;
    const alerts = await this.alertsView(evaluated);
    const backing = backingOf(backingStates, instances);
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
      backing,
      alerts,
      health: healthOf(backing, instances, alerts.active),
      ledger,
    };
  }

  /** The alerts from Alertmanager when one is configured (the console's own if it cannot be read). */
  private async alertsView(evaluated: AlertView[]): Promise<Overview['alerts']> {
    if (!this.alertmanager) {
      return { source: 'console', error: null, active: evaluated, not_evaluated: NOT_EVALUATED };
    }
    try {
      return {
        source: 'alertmanager',
        error: null,
        active: await this.alertmanager.read(),
        not_evaluated: [],
      };
    } catch (err) {
      const message = String((err as Error)?.message ?? err);
      return {
        source: 'console',
        error: `Alertmanager could not be read (${message}); the console's own evaluation is shown.`,
        active: evaluated,
        not_evaluated: NOT_EVALUATED,
      };
    }
  }

  /** The latest evaluation (tests, the metrics): firing and pending alerts. */
  get alertsNow(): readonly AlertView[] {
    return this.lastAlerts;
  }

  private queues(): Promise<Overview['queues']> {
    return Promise.all(
      Object.values(Queues).map(async (name) => {
        const q = await this.bull.get(name);
        const [counts, paused] = await Promise.all([
          q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
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

/** Each backing server with the instances whose own readiness check of it fails. */
function backingOf(states: BackingState[], instances: InstanceView[]): Overview['backing'] {
  return states.map((b) => ({
    ...b,
    failing_instances: instances
      .filter((i) => i.state !== 'down' && i.checks[b.name] === false)
      .map((i) => i.instance),
  }));
}

/**
 * "Is the platform healthy": down when a backing server is unreachable, a service has no instance
 * up or a critical alert fires; degraded when an instance is degraded or lost, an instance cannot
 * reach a backing server or a warning fires; healthy otherwise. An instance that stopped cleanly
 * (a rollout, a scale-down) is not a problem while its service has another instance up.
 */
export function healthOf(
  backing: Overview['backing'],
  instances: InstanceView[],
  alerts: Overview['alerts']['active'],
): Overview['health'] {
  const down: string[] = [];
  const degraded: string[] = [];
  for (const b of backing) {
    const name = BACKING_NAMES[b.name];
    if (!b.up) down.push(`${name} is unreachable from the gateway: ${b.reason ?? 'no answer'}.`);
    else if (b.failing_instances.length)
      degraded.push(
        `${b.failing_instances.length} instance${b.failing_instances.length === 1 ? '' : 's'} cannot reach ${name}.`,
      );
  }
  // "chat-service instance host:pid:id", not "chat-service@host:pid:id": a pod's host name makes the id
  // one word too long for a phone's line, and the sentence can break between service and instance.
  const named = (i: InstanceView) => {
    const at = i.instance.indexOf('@');
    return at < 0 ? i.instance : `${i.service} instance ${i.instance.slice(at + 1)}`;
  };
  const services = new Map<string, InstanceView[]>();
  for (const i of instances) services.set(i.service, [...(services.get(i.service) ?? []), i]);
  for (const [service, list] of services) {
    if (!list.some((i) => i.state !== 'down')) down.push(`No ${service} instance is up.`);
    for (const i of list) {
      if (i.state === 'degraded') degraded.push(`${named(i)} is degraded (${i.reason}).`);
      else if (i.state === 'down' && list.some((x) => x.state !== 'down') && !i.reason?.startsWith('stopped'))
        degraded.push(`${named(i)} is down (${i.reason}).`);
    }
  }
  for (const a of alerts) {
    if (a.state !== 'firing') continue;
    (a.severity === 'critical' ? down : degraded).push(`${a.alert} is firing: ${a.summary}`);
  }
  return {
    status: down.length ? 'down' : degraded.length ? 'degraded' : 'healthy',
    problems: [...down, ...degraded],
  };
}
