import { type UsageEvent, UsageEventSchema, UsageStream } from '@infer/contracts';
import {
  createPrisma,
  type InsertBatchResult,
  RequestLogRepository,
  UsageRepository,
} from '@infer/persistence';
import { connectNats, ensureUsageStream, type NatsConnection } from '@infer/rpc';
import {
  envInt,
  envList,
  NatsUrlSchema,
  parseConfig,
  StatusPublisher,
  serviceVersion,
  startAppContext,
} from '@infer/runtime';
import { createLogger, type Logger } from '@infer/telemetry';
import { AckPolicy, DeliverPolicy, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { z } from 'zod';
import { AlertDeliverer } from './alert-deliverer.js';
import { LedgerWriterHost, LedgerWriterModule, ledgerMetrics } from './ledger.module.js';

export const LedgerWriterEnvSchema = z.object({
  NATS_URL: NatsUrlSchema,
  DATABASE_URL: z
    .string()
    .default('postgresql://postgres@127.0.0.1:5432/infer')
    .describe('PostgreSQL connection URL (the usage ledger).'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Level of the JSON logs (pino).'),
  LEDGER_BATCH_SIZE: envInt(500, 1).describe('Most events written in one INSERT.'),
  LEDGER_MAX_WAIT_MS: envInt(1000, 1000).describe(
    "Longest a fetch waits for a batch to fill (ms; JetStream's minimum is 1000).",
  ),
  LEDGER_ACK_WAIT_MS: envInt(60_000, 1000).describe(
    'How long a delivered event may stay unacknowledged before JetStream delivers it again (ms).',
  ),
  LEDGER_RETRY_MAX_MS: envInt(10_000, 10).describe(
    'Longest pause between two attempts while PostgreSQL fails (ms).',
  ),
  REQUEST_LOG_RETENTION_DAYS: envInt(30, 1).describe(
    'Days of request log kept (UTC days, today included): older daily partitions of request_log are dropped whole.',
  ),
  REQUEST_LOG_BODY_RETENTION_DAYS: envInt(3, 1).describe(
    'Days the logged request and response bodies are kept (request_log_body, only for members and models ' +
      'whose bodies are logged): the hourly housekeeping deletes older ones; their request_log rows stay.',
  ),
  LEDGER_STREAM: z
    .string()
    .default(UsageStream.name)
    .describe("The usage events' JetStream stream (the gateway's default; tests use their own)."),
  LEDGER_SUBJECTS: envList(UsageStream.subjects.join(',')).describe(
    'Comma-separated subjects of that stream (tests use their own).',
  ),
  LEDGER_CONSUMER: z
    .string()
    .default(UsageStream.consumer)
    .describe(
      'Durable consumer name on the stream (the gateway shows its lag: its LEDGER_CONSUMER must match).',
    ),
  LEDGER_SERVICE_GRACE_MS: envInt(30_000, 0).describe(
    "How long after its time a service's usage event (source: service) waits before it is written (ms): " +
      "the gateway's event of the same request, when its gateway lives, arrives first and is the one kept.",
  ),
  ALERT_WEBHOOK_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      'Where alerts (a budget or token allowance reaching ALERT_THRESHOLDS of the gateway) are POSTed as JSON, ' +
        'signed with ALERT_WEBHOOK_SECRET (header x-infer-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of ' +
        '"<t>.<body>">). Unset: alerts are only shown in the console.',
    ),
  ALERT_WEBHOOK_SECRET: z
    .string()
    .optional()
    .describe(
      'The HMAC-SHA256 key of the alert signatures (required with ALERT_WEBHOOK_URL; at least 16 characters).',
    ),
  ALERT_POLL_MS: envInt(2_000, 50).describe('How often alerts waiting for delivery are looked for (ms).'),
  ALERT_MAX_ATTEMPTS: envInt(8, 1).describe('Attempts to deliver one alert before it is marked failed.'),
  ALERT_BACKOFF_MS: envInt(5_000, 10).describe(
    'Delay before the first retry of an alert delivery (ms); doubled per attempt, at most 1 hour, with jitter.',
  ),
  ALERT_TIMEOUT_MS: envInt(10_000, 100).describe('Longest wait for the webhook to answer one attempt (ms).'),
  STATUS_SUBJECT_PREFIX: z
    .string()
    .default('')
    .describe(
      "Tests only: prepended to the status subjects (the console's instance list), like MODEL_SUBJECT_PREFIX.",
    ),
  SERVICE_VERSION: z
    .string()
    .optional()
    .describe(
      "The version this instance reports (image tag, git sha); default the platform's package.json version.",
    ),
});
export type LedgerWriterConfig = z.infer<typeof LedgerWriterEnvSchema>;

/** A webhook URL needs its signing secret. */
function checkAlertConfig(config: LedgerWriterConfig): void {
  if (config.ALERT_WEBHOOK_URL && (config.ALERT_WEBHOOK_SECRET ?? '').length < 16)
    throw new Error('ALERT_WEBHOOK_URL needs ALERT_WEBHOOK_SECRET (at least 16 characters) to sign alerts');
}

/** Where batches go: UsageRepository in production, idempotent by request id. */
export interface LedgerSink {
  insertBatch(events: readonly UsageEvent[]): Promise<InsertBatchResult>;
}

/** How often the request log's retention runs (and the partitions ahead are created). */
const REQUEST_LOG_HOUSEKEEPING_MS = 3_600_000;
/** Days of request-log partitions created ahead of today. */
const REQUEST_LOG_DAYS_AHEAD = 2;

export interface LedgerWriterOptions {
  env?: NodeJS.ProcessEnv;
  /** Stop on SIGTERM/SIGINT (main.ts). */
  installSignalHandlers?: boolean;
  /**
   * Called after a batch is committed and before it is acknowledged. A test uses it to die at the
   * worst moment (committed, not acknowledged) and so to cause a redelivery.
   */
  beforeAck?: (events: readonly UsageEvent[]) => void | Promise<void>;
}

export interface LedgerWriterStats {
  batches: number;
  inserted: number;
  duplicates: number;
  /** Messages that are not usage events: terminated (never redelivered) and logged. */
  rejected: number;
  /** Failed attempts to write a batch (PostgreSQL down ...), each followed by a retry. */
  failures: number;
  /** Request-log rows written (every event, refusals included; a redelivery is not written twice). */
  logged: number;
}

export interface LedgerWriter {
  config: LedgerWriterConfig;
  stats: LedgerWriterStats;
  nc: NatsConnection;
  log: Logger;
  /** Resolves once the writer has nothing in hand (every fetched event written and acked). */
  idle(): Promise<void>;
  /** Events in the stream not yet delivered to the writer (the ledger's lag), from JetStream. */
  pending(): Promise<number>;
  /**
   * The request log's housekeeping (hourly, and at start): creates the partitions of today and the next
   * days, drops those past REQUEST_LOG_RETENTION_DAYS. Returns the dropped partitions.
   */
  requestLogHousekeeping(now?: number): Promise<string[]>;
  /** Base URL of the ops server (/healthz, /readyz, /metrics) when OPS_PORT is set. */
  opsUrl: string | null;
  stop(): Promise<void>;
}

const ms = (n: number) => n * 1_000_000; // JetStream durations are nanoseconds

/** How long a message holding one service usage event must still wait (ms); 0 for anything else. */
function serviceEventWait(body: unknown, now: number, graceMs: number): number {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 0;
  const e = body as { source?: unknown; at?: unknown };
  if (e.source !== 'service' || typeof e.at !== 'number') return 0;
  return Math.max(0, Math.min(graceMs, e.at + graceMs - now));
}

/**
 * The ledger writer: a JetStream pull consumer (durable, explicit acks) that writes usage events to
 * PostgreSQL in batches and acknowledges a batch only after its INSERT committed. The INSERT is
 * idempotent by request id, so a redelivered event (a writer that died between commit and ack) is
 * skipped, never counted twice. While PostgreSQL fails the writer keeps the batch, tells JetStream it
 * is still working on it, and retries with backoff; events that arrive meanwhile wait in the stream.
 */
export async function runLedgerWriter(
  config: LedgerWriterConfig,
  log: Logger,
  opts: Pick<LedgerWriterOptions, 'beforeAck'> = {},
): Promise<LedgerWriter> {
  checkAlertConfig(config);
  const prisma = createPrisma(config.DATABASE_URL, { poolSize: 2 });
  const sink: LedgerSink = new UsageRepository(prisma);
  // The request log: a second table written in the same batch, from the same events (ADR 0110).
  const requestLog = new RequestLogRepository(prisma);
  const retentionDays = config.REQUEST_LOG_RETENTION_DAYS;
  const nc = await connectNats(config.NATS_URL, 'ledger-writer');
  await ensureUsageStream(nc, config.LEDGER_STREAM, config.LEDGER_SUBJECTS);
  const jsm = await jetstreamManager(nc);
  const consumerConfig = {
    durable_name: config.LEDGER_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: ms(config.LEDGER_ACK_WAIT_MS),
    max_deliver: -1, // never give up on an event
    max_ack_pending: Math.max(1000, config.LEDGER_BATCH_SIZE * 4),
  };
  try {
    await jsm.consumers.info(config.LEDGER_STREAM, config.LEDGER_CONSUMER);
    await jsm.consumers.update(config.LEDGER_STREAM, config.LEDGER_CONSUMER, {
      ack_wait: consumerConfig.ack_wait,
      max_deliver: -1,
      max_ack_pending: consumerConfig.max_ack_pending,
    });
  } catch {
    await jsm.consumers.add(config.LEDGER_STREAM, consumerConfig).catch(async (e) => {
      // Another writer replica created it meanwhile.
      await jsm.consumers.info(config.LEDGER_STREAM, config.LEDGER_CONSUMER).catch(() => {
        throw e;
      });
    });
  }
  const consumer = await jetstream(nc).consumers.get(config.LEDGER_STREAM, config.LEDGER_CONSUMER);

  const stats: LedgerWriterStats = {
    batches: 0,
    inserted: 0,
    duplicates: 0,
    rejected: 0,
    failures: 0,
    logged: 0,
  };
  const requestLogHousekeeping = async (now = Date.now()): Promise<string[]> => {
    const days = Array.from({ length: REQUEST_LOG_DAYS_AHEAD + 1 }, (_, i) => now + i * 86_400_000);
    await requestLog.ensurePartitions(days);
    const dropped = await requestLog.dropExpired(retentionDays, now);
    if (dropped.length) log.info({ dropped, retentionDays }, 'request log partitions dropped');
    const bodies = await requestLog.dropExpiredBodies(config.REQUEST_LOG_BODY_RETENTION_DAYS, now);
    if (bodies) log.info({ bodies, days: config.REQUEST_LOG_BODY_RETENTION_DAYS }, 'request bodies deleted');
    return dropped;
  };
  // Never blocks the start or the loop: while PostgreSQL is down the writer starts and waits, and each
  // batch creates the partitions it needs itself.
  const housekeepingInBackground = () => {
    requestLogHousekeeping().catch((err) =>
      log.warn({ err: String((err as Error)?.message ?? err) }, 'request log housekeeping failed'),
    );
  };
  housekeepingInBackground();
  const housekeeping = setInterval(housekeepingInBackground, REQUEST_LOG_HOUSEKEEPING_MS);
  housekeeping.unref();
  // Alerts the gateways recorded, to the webhook (retries with backoff; the delivery log in PostgreSQL).
  const alerts = new AlertDeliverer({
    db: prisma,
    log,
    url: config.ALERT_WEBHOOK_URL ?? null,
    secret: config.ALERT_WEBHOOK_SECRET ?? '',
    pollMs: config.ALERT_POLL_MS,
    maxAttempts: config.ALERT_MAX_ATTEMPTS,
    backoffMs: config.ALERT_BACKOFF_MS,
    timeoutMs: config.ALERT_TIMEOUT_MS,
  });
  alerts.start();
  let stopping = false;
  let busy = false;
  let wake: (() => void) | undefined;
  const idleWaiters: (() => void)[] = [];
  const sleep = (t: number) =>
    new Promise<void>((r) => {
      const timer = setTimeout(r, t);
      wake = () => {
        clearTimeout(timer);
        r();
      };
    });

  /**
   * Inserts events until committed; false when the writer stops first (the messages are then handed
   * back to JetStream for redelivery).
   */
  async function writeChunk(events: UsageEvent[], good: JsMsg[]): Promise<boolean> {
    let delay = 100;
    let lastProgress = Date.now();
    // The usage part of this chunk is committed (a retry after a request-log failure rewrites nothing).
    let usageWritten = false;
    for (;;) {
      try {
        // Refusals are request-log records only: never usage rows (quotas and reports count what
        // reached a service). Both writes are idempotent, so a retry after a failure of either is safe.
        const usage = events.some((e) => e.refused) ? events.filter((e) => !e.refused) : events;
        const r = await sink.insertBatch(usage);
        if (!usageWritten) {
          stats.batches++;
          stats.inserted += r.inserted;
          stats.duplicates += r.duplicates;
          usageWritten = true;
        }
        const l = await requestLog.insertBatch(events, {
          retentionDays,
          bodyRetentionDays: config.REQUEST_LOG_BODY_RETENTION_DAYS,
        });
        stats.logged += l.inserted;
        log.debug({ events: events.length, ...r, logged: l.inserted }, 'batch written');
        return true;
      } catch (err) {
        stats.failures++;
        if (stopping) {
          log.warn(
            { events: events.length },
            'stopping with an unwritten batch: JetStream will redeliver it',
          );
          for (const m of good) m.nak();
          return false;
        }
        log.warn(
          { err: String((err as Error)?.message ?? err), retryInMs: delay, events: events.length },
          'ledger write failed; retrying',
        );
        // Keep the batch: tell JetStream we are still on it, so it is not handed to another writer.
        if (Date.now() - lastProgress > config.LEDGER_ACK_WAIT_MS / 3) {
          for (const m of good) m.working();
          lastProgress = Date.now();
        }
        await sleep(delay);
        delay = Math.min(delay * 2, config.LEDGER_RETRY_MAX_MS);
        for (const m of good) m.working();
        lastProgress = Date.now();
      }
    }
  }

  /** Writes one batch until it is committed (or the writer stops: then JetStream redelivers it). */
  async function write(msgs: JsMsg[]): Promise<void> {
    const events: UsageEvent[] = [];
    const good: JsMsg[] = [];
    const now = Date.now();
    for (const m of msgs) {
      // One event (a JSON object) or the gateway's batch of them (a JSON array, USAGE_BATCH_MAX).
      let body: unknown;
      try {
        body = m.json();
      } catch {
        body = undefined;
      }
      // A service's own event of a request (its gateway's fallback) waits out the grace first, so that
      // the gateway's event of the same request, when there is one, is written and this one skipped.
      const early = serviceEventWait(body, now, config.LEDGER_SERVICE_GRACE_MS);
      if (early > 0) {
        m.nak(early);
        continue;
      }
      let kept = 0;
      for (const one of Array.isArray(body) ? body : [body]) {
        const parsed = UsageEventSchema.safeParse(one);
        if (parsed.success) {
          events.push(parsed.data);
          kept++;
        } else {
          stats.rejected++;
          log.error(
            { subject: m.subject, seq: m.seq, data: JSON.stringify(one ?? m.string()).slice(0, 500) },
            'not a usage event; dropped',
          );
        }
      }
      if (kept) good.push(m);
      // Without a reason: a NATS server before 2.10 does not take `+TERM <reason>` and leaves the message
      // pending, redelivered after every ack wait (the reason is in the log line above).
      else m.term();
    }
    if (!events.length) return;
    // At most LEDGER_BATCH_SIZE events per statement: a fetch of that many messages may hold up to
    // USAGE_BATCH_MAX times as many events (the gateway's batches). Each chunk commits on its own; the
    // messages are acknowledged after the last one (a crash in between: redelivery, and the insert
    // skips what is already written).
    let touched = Date.now();
    for (let at = 0; at < events.length; at += config.LEDGER_BATCH_SIZE) {
      // A long batch: tell JetStream we are still on it, so it is not handed to another writer.
      if (at > 0 && Date.now() - touched > config.LEDGER_ACK_WAIT_MS / 3) {
        for (const m of good) m.working();
        touched = Date.now();
      }
      const chunk =
        events.length <= config.LEDGER_BATCH_SIZE ? events : events.slice(at, at + config.LEDGER_BATCH_SIZE);
      if (!(await writeChunk(chunk, good))) return;
    }
    await opts.beforeAck?.(events);
    // Acknowledged only now, after the commit; a lost ack means a harmless redelivery (the INSERT
    // skips a request id it already has). A plain ack, not ackAck(): no confirmation round trip per
    // event (a NATS request each: one more message, an inbox reply and a timer per event). The acks
    // leave before the next fetch on the same connection, so JetStream has them first; stop() drains.
    for (const m of good) m.ack();
  }

  let inHand = 0;
  const loop = (async () => {
    while (!stopping) {
      const batch: JsMsg[] = [];
      try {
        const it = await consumer.fetch({
          max_messages: config.LEDGER_BATCH_SIZE,
          expires: config.LEDGER_MAX_WAIT_MS,
        });
        for await (const m of it) batch.push(m);
      } catch (err) {
        if (stopping) break;
        log.warn(
          { err: String((err as Error)?.message ?? err) },
          'fetch from the usage stream failed; retrying',
        );
        await sleep(1000);
        continue;
      }
      if (batch.length) {
        busy = true;
        inHand = batch.length;
        try {
          await write(batch);
        } catch (err) {
          // beforeAck threw (a test's simulated crash) or something unexpected: do not ack; redelivery.
          log.error({ err }, 'batch not acknowledged');
          if (!stopping) await sleep(200);
        } finally {
          busy = false;
          inHand = 0;
        }
      }
      if (!busy) while (idleWaiters.length) idleWaiters.shift()!();
    }
  })();
  // Announces the instance to the gateways' overview; in flight = events of the batch in hand.
  const status = new StatusPublisher(nc, {
    service: 'ledger-writer',
    inflight: () => inHand,
    version: serviceVersion({ SERVICE_VERSION: config.SERVICE_VERSION }),
    subjectPrefix: config.STATUS_SUBJECT_PREFIX,
    log,
    // As its /readyz: the NATS connection it consumes on.
    readiness: () => ({ ready: !nc.isClosed(), checks: { nats: !nc.isClosed() } }),
  });
  status.start();
  log.info(
    { stream: config.LEDGER_STREAM, consumer: config.LEDGER_CONSUMER, batch: config.LEDGER_BATCH_SIZE },
    'ledger writer ready',
  );

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      stopping = true;
      clearInterval(housekeeping);
      status.stop();
      wake?.();
      await alerts.stop();
      await loop;
      await nc.drain().catch(() => undefined);
      await prisma.$disconnect().catch(() => undefined);
      log.info(stats, 'ledger writer stopped');
    })();
    return stopped;
  };
  return {
    config,
    stats,
    nc,
    log,
    idle: () => new Promise<void>((r) => idleWaiters.push(r)),
    requestLogHousekeeping,
    pending: async () => (await jsm.consumers.info(config.LEDGER_STREAM, config.LEDGER_CONSUMER)).num_pending,
    opsUrl: null,
    stop,
  };
}

/**
 * Starts the ledger writer process: a Nest application context whose LedgerWriterHost runs the
 * consumer loop (runLedgerWriter), with the ops server (OPS_PORT: /healthz, /readyz, /metrics with the
 * ledger's counters and its lag) and a graceful stop on SIGTERM (the batch in hand is written and
 * acknowledged first).
 */
export async function startLedgerWriter(opts: LedgerWriterOptions = {}): Promise<LedgerWriter> {
  const config = parseConfig('ledger-writer', LedgerWriterEnvSchema, opts.env);
  const log = createLogger('ledger-writer', config.LOG_LEVEL);
  const host = new LedgerWriterHost(
    () => runLedgerWriter(config, log, opts),
    (w) => w.stop(),
  );
  const ctx = await startAppContext({
    name: 'ledger-writer',
    module: LedgerWriterModule.forRoot(host),
    env: opts.env,
    log,
    installSignalHandlers: opts.installSignalHandlers,
    registries: [ledgerMetrics(host)],
    // runLedgerWriter announces the writer itself (in flight = events in hand).
    announce: false,
    checks: () => [{ name: 'nats', check: () => !!host.value && !host.value.nc.isClosed() }],
  });
  const writer = host.value;
  if (!writer) throw new Error('ledger writer did not start');
  return { ...writer, opsUrl: ctx.opsUrl, stop: ctx.stop };
}
