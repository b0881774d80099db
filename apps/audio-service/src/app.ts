import { QueueGroups, Queues, Subjects } from '@infer/contracts';
import { bullConnection, createRedisClient, type NatsConnection, watchRedis } from '@infer/rpc';
import { startAppContext, startMicroservice } from '@infer/runtime';
import { createLogger, watchQueue } from '@infer/telemetry';
import { Queue, QueueEvents } from 'bullmq';
import { AudioServiceModule, TranscriptionWorkerHost } from './audio.module.js';
import { BlobStore } from './blobs.js';
import { type AudioConfig, type AudioRole, loadAudioConfig, toolsOf } from './config.js';
import { type EngineFactory, EngineRegistry } from './engines.js';
import { TranscriptionJobs } from './jobs/client.js';
import type { TranscriptionWorker, WorkerDeps } from './jobs/worker.js';
import { loadVad } from './media/vad.js';
import { AudioMetrics, type MetricsServer, startMetricsServer } from './metrics/metrics.js';
import { Slots } from './slots.js';
import { embeddedSpeechFactory } from './speech/embedded.js';
import type { SpeechEngine } from './speech/engine.js';
import { upstreamSpeechFactory } from './speech/upstream.js';
import type { TranscriptionEngine } from './transcription/engine.js';
import { pocketsphinxFactory } from './transcription/pocketsphinx.js';
import { upstreamTranscriptionFactory } from './transcription/upstream.js';

export interface AudioServiceOptions {
  /** Environment to validate (AudioEnvSchema); default process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * For tests only: prepended to every subject the service answers (e.g. `test.<uuid>.`), so that
   * concurrent test files do not answer each other's requests. Production leaves it ''.
   */
  subjectPrefix?: string;
  /** Stop on SIGTERM/SIGINT (main.ts: true; in-process tests: false, the default). */
  installSignalHandlers?: boolean;
  /** The process role; default AUDIO_ROLE from the environment (itself default `all`). */
  role?: AudioRole;
  /** Engine factories to use instead of the built-in ones. */
  speechEngines?: readonly EngineFactory<SpeechEngine>[];
  transcriptionEngines?: readonly EngineFactory<TranscriptionEngine>[];
}

export interface AudioService {
  role: AudioRole;
  config: AudioConfig;
  /** The subjects answered (api and all roles), with the prefix applied. */
  subjects: { speech: string; transcriptions: string } | null;
  /** The BullMQ queue (both roles hold one: the api adds jobs, workers add segments). */
  queue: Queue;
  worker: TranscriptionWorker | null;
  metrics: AudioMetrics;
  /** URL of GET /metrics when AUDIO_METRICS_PORT is set. */
  metricsUrl: string | null;
  /** Base URL of the ops server (/healthz, /readyz, /metrics with the audio metrics) when OPS_PORT is set. */
  opsUrl: string | null;
  stop(): Promise<void>;
}

/**
 * Starts the audio service in its role: `api` answers speech and transcription requests over NATS
 * (queue group audio-service) and turns transcriptions into BullMQ jobs; `worker` runs those jobs;
 * `all` does both in one process (the default for one machine).
 */
export async function startAudioService(opts: AudioServiceOptions = {}): Promise<AudioService> {
  const config = loadAudioConfig(opts.env);
  const role = opts.role ?? config.AUDIO_ROLE;
  const log = createLogger('audio-service', config.LOG_LEVEL).child({ role });
  const tools = toolsOf(config);
  const metrics = new AudioMetrics({ defaultMetrics: config.AUDIO_METRICS_PORT !== undefined });
  const redis = watchRedis(
    createRedisClient(config.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 }),
    log,
    'audio-service',
  );
  await redis.connect();
  const blobs = new BlobStore(redis);
  const connection = bullConnection(config.REDIS_URL);
  const queue = new Queue(Queues.audioTranscriptions, { connection, prefix: config.BULLMQ_PREFIX });
  metrics.readQueuesWith(async () => ({ [Queues.audioTranscriptions]: await queue.getJobCounts() }));
  const sttEngines = new EngineRegistry<TranscriptionEngine>(
    'transcription',
    log,
    opts.transcriptionEngines ?? [pocketsphinxFactory(tools), upstreamTranscriptionFactory],
  );
  const ttsEngines = new EngineRegistry<SpeechEngine>(
    'speech',
    log,
    opts.speechEngines ?? [embeddedSpeechFactory(tools), upstreamSpeechFactory],
  );

  const closers: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    for (const close of closers.reverse()) await close().catch((err) => log.warn({ err }, 'close failed'));
    closers.length = 0;
  };
  closers.push(async () => redis.quit());
  const unwatch = watchQueue(queue);
  closers.push(async () => {
    unwatch();
    await queue.close();
  });
  closers.push(() => sttEngines.close());
  closers.push(() => ttsEngines.close());

  let worker: TranscriptionWorker | null = null;
  let subjects: AudioService['subjects'] = null;
  let metricsServer: MetricsServer | null = null;
  let opsUrl: string | null = null;
  try {
    const workerDeps: WorkerDeps | undefined =
      role === 'worker' || role === 'all'
        ? { config, tools, queue, redis, blobs, engines: sttEngines, metrics, log }
        : undefined;
    let api: Parameters<typeof AudioServiceModule.forRoot>[0]['api'];
    // The NATS connection, once the microservice has one (the speech handler reads its max payload).
    const natsHolder: { nc: NatsConnection | null } = { nc: null };
    if (role === 'api' || role === 'all') {
      const events = new QueueEvents(Queues.audioTranscriptions, {
        connection,
        prefix: config.BULLMQ_PREFIX,
      });
      closers.push(() => events.close());
      await events.waitUntilReady();
      const jobs = new TranscriptionJobs(
        queue,
        events,
        redis,
        config.BULLMQ_PREFIX,
        config.AUDIO_JOB_ATTEMPTS,
        log,
      );
      const prefix = opts.subjectPrefix ?? '';
      subjects = {
        speech: `${prefix}${Subjects.speech}`,
        transcriptions: `${prefix}${Subjects.transcriptions}`,
      };
      api = {
        speech: {
          engines: ttsEngines,
          blobs,
          slots: new Slots(config.AUDIO_SPEECH_CONCURRENCY),
          metrics,
          maxPayload: () => natsHolder.nc?.info?.max_payload ?? 1024 * 1024,
        },
        transcription: {
          engines: sttEngines,
          jobs,
          metrics,
          jobTimeoutMs: config.AUDIO_JOB_TIMEOUT_MS,
        },
      };
    }
    // One Nest app per process: the controller in the api role, the worker host in the worker role.
    const module = AudioServiceModule.forRoot({ api, worker: workerDeps });
    // A worker that splits at pauses (AUDIO_SPLIT=vad, the default) is ready once its VAD has loaded: one
    // that cannot load it (a missing package or model) would cut long audio at fixed lengths instead.
    let vad: 'loading' | 'ready' | 'failed' = 'loading';
    if (workerDeps && config.AUDIO_SPLIT === 'vad')
      loadVad(config.AUDIO_VAD_MODEL || undefined).then(
        () => {
          vad = 'ready';
        },
        (err) => {
          vad = 'failed';
          log.error(
            { err },
            'the voice activity detector cannot load: not ready (AUDIO_SPLIT=fixed runs without it)',
          );
        },
      );
    const checks = () => [
      { name: 'redis', check: () => redis.status === 'ready' },
      ...(workerDeps && config.AUDIO_SPLIT === 'vad' ? [{ name: 'vad', check: () => vad === 'ready' }] : []),
    ];
    const common = {
      name: 'audio-service',
      module,
      env: opts.env,
      log,
      checks,
      registries: [metrics.registry],
    };
    if (api) {
      const running = await startMicroservice({
        ...common,
        queue: QueueGroups.audio,
        subjectPrefix: opts.subjectPrefix ?? '',
      });
      natsHolder.nc = running.nc;
      closers.push(() => running.stop());
      opsUrl = running.opsUrl;
      if (workerDeps) worker = running.app.get(TranscriptionWorkerHost).value;
    } else {
      const running = await startAppContext({
        ...common,
        statusService: 'audio-worker',
        statusSubjectPrefix: opts.subjectPrefix ?? '',
      });
      closers.push(() => running.stop());
      opsUrl = running.opsUrl;
      worker = running.app.get(TranscriptionWorkerHost).value;
    }
    if (config.AUDIO_METRICS_PORT !== undefined) {
      metricsServer = await startMetricsServer(metrics, config.AUDIO_METRICS_PORT, config.AUDIO_METRICS_HOST);
      const m = metricsServer;
      closers.push(() => m.close());
    }
  } catch (e) {
    await cleanup();
    throw e;
  }
  if (role === 'api') {
    // Not an error (workers may start later), but transcriptions wait until their deadline meanwhile.
    const workers = await queue.getWorkersCount().catch(() => -1);
    if (workers === 0)
      log.warn({ queue: Queues.audioTranscriptions }, 'no transcription worker is running yet');
  }
  log.info(
    {
      queue: Queues.audioTranscriptions,
      prefix: config.BULLMQ_PREFIX,
      subjects,
      metrics: metricsServer?.url ?? null,
    },
    'audio service ready',
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= cleanup().then(() => log.info('audio service stopped'));
    return stopping;
  };
  if (opts.installSignalHandlers) {
    for (const sig of ['SIGTERM', 'SIGINT'] as const)
      process.once(sig, () => void stop().then(() => process.exit(0)));
  }
  return {
    role,
    config,
    subjects,
    queue,
    worker,
    metrics,
    metricsUrl: metricsServer?.url ?? null,
    opsUrl,
    stop,
  };
}
