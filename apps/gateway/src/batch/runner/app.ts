import { type BatchJobData, Queues } from '@infer/contracts';
import { checkFileStoreEnv, createFileStore, FileStoreEnvShape } from '@infer/image-store';
import {
  bullConnection,
  closeWorkerRequeueing,
  connectNats,
  createRedisClient,
  ensureUsageStream,
  NatsRpcClientProxy,
  queuePrefixFor,
  requeueOnShutdown,
} from '@infer/rpc';
import { AppLifetime, envInt, parseConfig, startAppContext } from '@infer/runtime';
import { createLogger, type Logger } from '@infer/telemetry';
import { type DynamicModule, Module } from '@nestjs/common';
import { Worker } from 'bullmq';
import { Counter, Gauge, Registry } from 'prom-client';
import { z } from 'zod';
import { CallSettlement } from '../../call/call-settlement.service.js';
import { GovernedCall } from '../../call/governed-call.js';
import { PRESSURE_KEY_SUFFIX, readPressure } from '../../call/observers/pressure.js';
import { UsageObserver } from '../../call/observers/usage.observer.js';
import { ParkedResults } from '../../call/parked-results.store.js';
import { CatalogService } from '../../catalog/catalog.service.js';
import { type GatewayConfig, GatewayEnvFields } from '../../config.js';
import { LimitsService } from '../../limits/limits.service.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { openPersistence } from '../../persistence.js';
import { UsagePublisher } from '../../usage/usage-publisher.js';
import { BatchRunner } from './batch-runner.js';
import { BatchLane } from './lane.js';

/**
 * The settings the runner shares with the gateway are the gateway's own fields (same defaults and
 * checks: it must find the same queues, usage stream, limits keys and file store); then its own.
 */
export const BatchRunnerEnvSchema = GatewayEnvFields.pick({
  NATS_URL: true,
  DATABASE_URL: true,
  REDIS_URL: true,
  LOG_LEVEL: true,
  BULLMQ_PREFIX: true,
  MODEL_SUBJECT_PREFIX: true,
  USAGE_STREAM: true,
  USAGE_SUBJECT_ROOT: true,
  LIMITS_ENABLED: true,
  LIMITS_FILE: true,
  LIMITS_REDIS_PREFIX: true,
  ALERT_THRESHOLDS: true,
  CATALOG_REFRESH_MS: true,
  ...pickAll(FileStoreEnvShape),
  FILE_RETENTION_DAYS: true,
})
  .extend({
    BATCH_WORKER_CONCURRENCY: envInt(2, 1).describe('Batches one runner works on at once.'),
    BATCH_MODEL_CONCURRENCY: envInt(4, 1).describe(
      "Lines of one model running at once in this runner (the lane's cap).",
    ),
    BATCH_YIELD_CONCURRENCY: envInt(1, 0).describe(
      'The cap while interactive requests are in flight (0: no new batch line until they are done).',
    ),
    BATCH_LINE_TIMEOUT_MS: envInt(600_000, 1_000).describe('Longest one line may take in its service (ms).'),
    BATCH_LINE_RETRIES: envInt(6, 1).describe(
      'Attempts of a line answered 429/503 (backing off between them) before it becomes an error line.',
    ),
    BATCH_BACKOFF_MIN_MS: envInt(500, 1).describe("A model's first pause after a 429/503 (ms); it doubles."),
    BATCH_BACKOFF_MAX_MS: envInt(30_000, 1).describe("A model's longest pause after 429/503 (ms)."),
    BATCH_CHECK_MS: envInt(500, 10).describe(
      'How often a running batch looks for a cancel and its expiry, and writes its progress (ms).',
    ),
    BATCH_LOCK_MS: envInt(30_000, 500).describe(
      'BullMQ lock of a batch job (ms): a runner killed mid-batch hands it to another after about this long.',
    ),
    FILE_SWEEP_MS: envInt(60_000, 0).describe(
      'How often expired files are deleted (ms; 0: never, e.g. in tests).',
    ),
  })
  .superRefine(checkFileStoreEnv);
export type BatchRunnerConfig = z.infer<typeof BatchRunnerEnvSchema>;

function pickAll<K extends string>(shape: Record<K, unknown>): Record<K, true> {
  return Object.fromEntries(Object.keys(shape).map((k) => [k, true])) as Record<K, true>;
}

export interface RunningBatchRunner {
  runner: BatchRunner;
  lane: BatchLane;
  opsUrl: string | null;
  log: Logger;
  stop(): Promise<void>;
}

interface Parts {
  runner: BatchRunner;
  lane: BatchLane;
  close(): Promise<void>;
}

/** Runs the batch worker as a Nest provider: started with the app, stopped (jobs requeued) before it closes. */
export class BatchRunnerHost extends AppLifetime<Parts> {}

@Module({})
export class BatchRunnerModule {
  static forRoot(host: BatchRunnerHost): DynamicModule {
    return { module: BatchRunnerModule, providers: [{ provide: BatchRunnerHost, useValue: host }] };
  }
}

/** Connections, catalog, limits, lane and the BullMQ worker of the runner. */
async function openRunner(config: BatchRunnerConfig, log: Logger): Promise<Parts> {
  const persistence = await openPersistence(config.DATABASE_URL, log);
  const prisma = persistence.prisma;
  // One primary or a Redis Cluster, as the gateway (redis+cluster:// URLs: libs/rpc/src/redis.ts).
  const redis = createRedisClient(config.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  const nc = await connectNats(config.NATS_URL, 'batch-runner');
  await ensureUsageStream(nc, config.USAGE_STREAM, [`${config.USAGE_SUBJECT_ROOT}.>`]);
  const store = createFileStore(config);
  // The gateway's own catalog and limits services, fed with the settings they read.
  const gatewaySettings = {
    CATALOG_REFRESH_MS: config.CATALOG_REFRESH_MS,
    LIMITS_ENABLED: config.LIMITS_ENABLED,
    LIMITS_FILE: config.LIMITS_FILE,
    LIMITS_REDIS_PREFIX: config.LIMITS_REDIS_PREFIX,
    // Batch lines count toward the allowances and budgets: their thresholds alert as the gateway's do.
    ALERT_THRESHOLDS: config.ALERT_THRESHOLDS,
  } as GatewayConfig;
  const catalog = new CatalogService(persistence.catalogSource, gatewaySettings, log);
  await catalog.onModuleInit();
  const limits = new LimitsService(redis, persistence.pool, gatewaySettings, log, new MetricsService());
  limits.onModuleInit();

  // Interactive pressure, read every 100 ms from the gateways' reports (batch/pressure.ts).
  let interactive = 0;
  const pressureKey = `${config.BULLMQ_PREFIX}:${PRESSURE_KEY_SUFFIX}`;
  const pressureTimer = setInterval(() => {
    readPressure(redis, pressureKey)
      .then((n) => {
        interactive = n;
      })
      .catch(() => {
        interactive = 0;
      });
  }, 100);
  pressureTimer.unref();
  const lane = new BatchLane({
    cap: config.BATCH_MODEL_CONCURRENCY,
    yieldCap: config.BATCH_YIELD_CONCURRENCY,
    backoffMinMs: config.BATCH_BACKOFF_MIN_MS,
    backoffMaxMs: config.BATCH_BACKOFF_MAX_MS,
    pressure: () => interactive,
  });
  // The gateway's governed call, with the one usage publisher behind its usage observer: the runner
  // waits for each line's usage ack (recordAcked) before it writes the line's checkpoint.
  // One event per message (batchMax 1), its request id as the JetStream message id, as the runner's
  // events always were: a line run again after a crash is a duplicate JetStream drops by id.
  const usage = new UsagePublisher(nc, log, config.USAGE_SUBJECT_ROOT, { batchMax: 1 });
  const call = new GovernedCall(
    new NatsRpcClientProxy(nc),
    limits,
    new CallSettlement([new UsageObserver(usage)], log),
    new ParkedResults(redis, log),
    gatewaySettings,
  );
  const runner = new BatchRunner({
    db: prisma,
    store,
    call,
    maxPayload: () => nc.info?.max_payload ?? 1024 * 1024,
    catalog: () => catalog.current,
    lane,
    log,
    settings: {
      subjectPrefix: config.MODEL_SUBJECT_PREFIX,
      lineTimeoutMs: config.BATCH_LINE_TIMEOUT_MS,
      lineRetries: config.BATCH_LINE_RETRIES,
      checkMs: config.BATCH_CHECK_MS,
      fileRetentionMs: config.FILE_RETENTION_DAYS * 86_400_000,
    },
  });
  const worker = new Worker<BatchJobData>(
    Queues.batches,
    requeueOnShutdown((job, _token, signal) => runner.process(job.data.batchId, signal)),
    {
      connection: bullConnection(config.REDIS_URL),
      prefix: config.BULLMQ_PREFIX,
      concurrency: config.BATCH_WORKER_CONCURRENCY,
      lockDuration: config.BATCH_LOCK_MS,
      stalledInterval: config.BATCH_LOCK_MS,
      // A batch outlives any number of dead runners: it resumes from its checkpoint each time.
      maxStalledCount: 1_000,
    },
  );
  worker.on('failed', (job, err) =>
    log.warn({ batchId: job?.data.batchId, err }, 'batch job attempt failed'),
  );
  worker.on('error', (err) => log.warn({ err }, 'batch worker error'));

  // Retention: expired files go (rows and bytes).
  let sweepTimer: NodeJS.Timeout | undefined;
  if (config.FILE_SWEEP_MS > 0) {
    sweepTimer = setInterval(() => {
      void (async () => {
        const gone = await prisma.file.findMany({ where: { expiresAt: { lte: new Date() } }, take: 200 });
        for (const f of gone) {
          await store.delete(f.storageKey).catch(() => undefined);
          await prisma.file.delete({ where: { id: f.id } }).catch(() => undefined);
        }
      })().catch((err) => log.warn({ err }, 'file sweep failed'));
    }, config.FILE_SWEEP_MS);
    sweepTimer.unref();
  }
  log.info(
    { concurrency: config.BATCH_WORKER_CONCURRENCY, modelCap: config.BATCH_MODEL_CONCURRENCY },
    'batch runner ready',
  );
  return {
    runner,
    lane,
    close: async () => {
      clearInterval(pressureTimer);
      clearInterval(sweepTimer);
      await closeWorkerRequeueing(worker);
      catalog.onApplicationShutdown();
      await limits.onApplicationShutdown();
      await usage.close();
      await nc.drain().catch(() => undefined);
      redis.disconnect();
      await store.close();
      await persistence.close();
    },
  };
}

/** Prometheus metrics of the runner (ops server /metrics): lines queued, running and done. */
export function batchMetrics(host: BatchRunnerHost): Registry {
  const registry = new Registry();
  const stats = () => host.value?.runner.stats;
  new Gauge({
    name: 'batch_lines_queued',
    help: 'Lines of the batches this runner holds that have no output or error line yet.',
    registers: [registry],
    collect() {
      this.set(Math.max(0, stats()?.queued ?? 0));
    },
  });
  new Gauge({
    name: 'batch_lines_running',
    help: 'Batch lines in their model service now.',
    registers: [registry],
    collect() {
      this.set(stats()?.running ?? 0);
    },
  });
  const seen = { ok: 0, error: 0 };
  new Counter({
    name: 'batch_lines_done_total',
    help: 'Batch lines with their output line (outcome ok) or error line (outcome error).',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      const d = stats()?.done;
      if (!d) return;
      for (const k of ['ok', 'error'] as const) {
        if (d[k] > seen[k]) this.inc({ outcome: k }, d[k] - seen[k]);
        seen[k] = d[k];
      }
    },
  });
  new Gauge({
    name: 'batch_batches_active',
    help: 'Batches this runner is working on.',
    registers: [registry],
    collect() {
      this.set(stats()?.batchesActive ?? 0);
    },
  });
  new Gauge({
    name: 'batch_lane_yielding',
    help: '1 while interactive requests are in flight and the batch lane runs at its yield cap.',
    registers: [registry],
    collect() {
      this.set(host.value?.lane.yielding ? 1 : 0);
    },
  });
  return registry;
}

export interface BatchRunnerOptions {
  env?: NodeJS.ProcessEnv;
  installSignalHandlers?: boolean;
}

/**
 * Starts the batch runner role of the gateway (its own process and Deployment, scaled alone): a Nest
 * application context whose provider runs the BullMQ worker of the `batches` queue, with the ops
 * server (OPS_PORT: /healthz, /readyz, /metrics).
 */
export async function startBatchRunner(opts: BatchRunnerOptions = {}): Promise<RunningBatchRunner> {
  const parsed = parseConfig('batch-runner', BatchRunnerEnvSchema, opts.env);
  // As the gateway's (loadGatewayConfig): on a Redis Cluster the queues' prefix carries a {tag}.
  const config = { ...parsed, BULLMQ_PREFIX: queuePrefixFor(parsed.REDIS_URL, parsed.BULLMQ_PREFIX) };
  const log = createLogger('batch-runner', config.LOG_LEVEL);
  const host = new BatchRunnerHost(
    () => openRunner(config, log),
    (p) => p.close(),
  );
  const ctx = await startAppContext({
    name: 'batch-runner',
    module: BatchRunnerModule.forRoot(host),
    env: opts.env,
    log,
    installSignalHandlers: opts.installSignalHandlers,
    registries: [batchMetrics(host)],
    checks: () => [{ name: 'runner', check: () => !!host.value }],
    // Its status on the subjects of the gateways it serves (a test stack's own, like its model subjects).
    statusSubjectPrefix: config.MODEL_SUBJECT_PREFIX,
  });
  const parts = host.value;
  if (!parts) throw new Error('batch runner did not start');
  return { runner: parts.runner, lane: parts.lane, opsUrl: ctx.opsUrl, log, stop: ctx.stop };
}
