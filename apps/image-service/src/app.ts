import { QueueGroups, Queues, Subjects } from '@infer/contracts';
import { createImageStore, type ImageStore } from '@infer/image-store';
import { bullConnection, createRedisClient, watchRedis } from '@infer/rpc';
import { startAppContext, startMicroservice } from '@infer/runtime';
import { createLogger, watchQueue } from '@infer/telemetry';
import { Queue, QueueEvents } from 'bullmq';
import { type ImageConfig, type ImageRole, loadImageConfig } from './config.js';
import { ContentPolicy } from './content-policy.js';
import { builtinImageEngineFactories } from './engines/builtin.js';
import { type ImageEngineFactory, ImageEngineRegistry } from './engines/registry.js';
import { ImageServiceModule, ImageWorkerHost } from './image.module.js';
import type { ImagesHandlerDeps } from './images/images.handler.js';
import { ImageJobs } from './jobs/client.js';
import type { Clock, ImageWorker, ImageWorkerOptions } from './jobs/worker.js';

export interface ImageServiceOptions {
  /** Environment to validate (ImageEnvSchema); default process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * For tests only: prepended to every subject the service answers (e.g. `test.<uuid>.`), so that
   * concurrent test files do not answer each other's requests. Production leaves it ''.
   */
  subjectPrefix?: string;
  /** Stop on SIGTERM/SIGINT (main.ts: true; in-process tests: false, the default). */
  installSignalHandlers?: boolean;
  /** The process role; default IMAGE_ROLE from the environment (itself default `all`). */
  role?: ImageRole;
  /** The clock of `created` and `expires_at` (and of the fs/s3 stores' expiry checks); default Date. */
  clock?: Clock;
  /** Engine factories to use instead of the built-in ones. */
  engines?: readonly ImageEngineFactory[];
}

export interface ImageService {
  role: ImageRole;
  config: ImageConfig;
  /** The subjects answered (api and all roles), with the prefix applied. */
  subjects: { generations: string; edits: string } | null;
  queue: Queue;
  store: ImageStore;
  worker: ImageWorker | null;
  /** Base URL of the ops server (/healthz, /readyz, /metrics) when OPS_PORT is set. */
  opsUrl: string | null;
  stop(): Promise<void>;
}

const systemClock: Clock = { now: () => Date.now() };

/**
 * Starts the image service in its role: `api` answers generations and edits over NATS (queue group
 * image-service), checks the content policy, turns each request into one BullMQ job and waits for its
 * result; `worker` runs those jobs on the engines (GPU-bound in production: scale it alone); `all`
 * does both in one process (the default for one machine).
 */
export async function startImageService(opts: ImageServiceOptions = {}): Promise<ImageService> {
  const config = loadImageConfig(opts.env);
  const role = opts.role ?? config.IMAGE_ROLE;
  const clock = opts.clock ?? systemClock;
  const log = createLogger('image-service', config.LOG_LEVEL).child({ role });
  const policy = ContentPolicy.load(config.IMAGE_CONTENT_POLICY_FILE);
  const engines = new ImageEngineRegistry(log, opts.engines ?? builtinImageEngineFactories);
  const connection = bullConnection(config.REDIS_URL);
  const queueName = Queues.imageJobs;

  const closers: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    for (const close of closers.reverse()) await close().catch((err) => log.warn({ err }, 'close failed'));
    closers.length = 0;
  };
  const redis = watchRedis(
    createRedisClient(config.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 }),
    log,
    'image-service',
  );
  await redis.connect();
  closers.push(async () => redis.quit());
  const store = createImageStore(config, { redis, now: () => clock.now() });
  closers.push(() => store.close());
  const queue = new Queue(queueName, { connection, prefix: config.BULLMQ_PREFIX });
  const unwatch = watchQueue(queue);
  closers.push(async () => {
    unwatch();
    await queue.close();
  });
  closers.push(() => engines.close());

  let worker: ImageWorker | null = null;
  let subjects: ImageService['subjects'] = null;
  let opsUrl: string | null = null;
  try {
    const workerOptions: ImageWorkerOptions | undefined =
      role === 'worker' || role === 'all'
        ? {
            queueName,
            prefix: config.BULLMQ_PREFIX,
            connection,
            redisUrl: config.REDIS_URL,
            concurrency: config.IMAGE_WORKER_CONCURRENCY,
            name: config.IMAGE_WORKER_NAME,
            lockDurationMs: config.IMAGE_LOCK_DURATION_MS,
            engines,
            store,
            log,
            clock,
          }
        : undefined;
    let api: ImagesHandlerDeps | undefined;
    if (role === 'api' || role === 'all') {
      const events = new QueueEvents(queueName, { connection, prefix: config.BULLMQ_PREFIX });
      closers.push(() => events.close());
      await events.waitUntilReady();
      api = {
        jobs: new ImageJobs(queue, events, redis, config.BULLMQ_PREFIX, log),
        engines,
        policy,
        clock,
        urlTtlSeconds: config.IMAGE_URL_TTL_SECONDS,
        b64TtlSeconds: config.IMAGE_B64_TTL_SECONDS,
      };
      const prefix = opts.subjectPrefix ?? '';
      subjects = {
        generations: `${prefix}${Subjects.imageGenerations}`,
        edits: `${prefix}${Subjects.imageEdits}`,
      };
    }
    // One Nest app per process: the controller in the api role, the worker host in the worker role.
    const module = ImageServiceModule.forRoot({ api, worker: workerOptions });
    const checks = () => [{ name: 'redis', check: () => redis.status === 'ready' }];
    const running = api
      ? await startMicroservice({
          name: 'image-service',
          queue: QueueGroups.image,
          module,
          env: opts.env,
          log,
          subjectPrefix: opts.subjectPrefix ?? '',
          checks,
        })
      : await startAppContext({
          name: 'image-service',
          module,
          env: opts.env,
          log,
          checks,
          statusService: 'image-worker',
          statusSubjectPrefix: opts.subjectPrefix ?? '',
        });
    closers.push(() => running.stop());
    opsUrl = running.opsUrl;
    if (workerOptions) worker = running.app.get(ImageWorkerHost).value;
  } catch (e) {
    await cleanup();
    throw e;
  }
  log.info(
    {
      queue: queueName,
      prefix: config.BULLMQ_PREFIX,
      subjects,
      store: store.kind,
      engines: engines.types,
      contentPolicyRules: policy.size,
    },
    'image service ready',
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= cleanup().then(() => log.info('image service stopped'));
    return stopping;
  };
  if (opts.installSignalHandlers) {
    for (const sig of ['SIGTERM', 'SIGINT'] as const)
      process.once(sig, () => void stop().then(() => process.exit(0)));
  }
  return { role, config, subjects, queue, store, worker, opsUrl, stop };
}
