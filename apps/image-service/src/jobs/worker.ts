import { randomBytes } from 'node:crypto';
import { ApiError, type StoredImageRef } from '@infer/contracts';
import { type ImageStore, pngDimensions, sniffImageType } from '@infer/image-store';
import { closeWorkerRequeueing, createRedisClient, requeueOnShutdown, watchRedis } from '@infer/rpc';
import { instrumentJobs, type Logger } from '@infer/telemetry';
import { type ConnectionOptions, type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { EngineImage } from '../engines/engine.js';
import type { ImageEngineRegistry } from '../engines/registry.js';
import { cancelChannel, type ImageJobData, type ImageJobResult, toWire } from './jobs.js';

export interface Clock {
  now(): number;
}

export interface ImageWorkerOptions {
  queueName: string;
  prefix: string;
  connection: ConnectionOptions;
  redisUrl: string;
  concurrency: number;
  name: string;
  lockDurationMs: number;
  engines: ImageEngineRegistry;
  store: ImageStore;
  log: Logger;
  clock: Clock;
}

/** A new id for a generated image: `img_` + 24 random bytes, base64url. */
export function newImageId(): string {
  return `img_${randomBytes(24).toString('base64url')}`;
}

/**
 * The worker role: takes image jobs from BullMQ, runs the model's engine once per image (variant i with
 * seed + i), checks each result is an image, stores it (@infer/image-store) and returns the ids.
 * Jobs are aborted by their deadline or by a cancel message from the api role (Redis pub/sub).
 */
export class ImageWorker {
  private constructor(
    private readonly worker: Worker<ImageJobData, ImageJobResult>,
    private readonly subscriber: Redis,
  ) {}

  static async start(o: ImageWorkerOptions): Promise<ImageWorker> {
    const subscriber = watchRedis(
      createRedisClient(o.redisUrl, { lazyConnect: true, maxRetriesPerRequest: null }),
      o.log,
      'image-worker-cancel',
    );
    await subscriber.connect();
    const channel = cancelChannel(o.prefix, o.queueName);
    // The processor declares (job, token, signal): BullMQ passes the signal that cancelJob() aborts.
    const worker = new Worker<ImageJobData, ImageJobResult>(
      o.queueName,
      // A job cut short by this worker's shutdown goes back to the wait list for another worker.
      requeueOnShutdown(
        instrumentJobs(o.queueName, (job, _token, signal) =>
          processImageJob(job as Job<ImageJobData>, signal, o),
        ),
      ),
      {
        connection: o.connection,
        prefix: o.prefix,
        concurrency: o.concurrency,
        name: o.name,
        lockDuration: o.lockDurationMs,
        // Look for stalled jobs (a worker killed mid-job: its lock expired) as often as a lock lasts, so a
        // job is taken over within about two lock durations rather than BullMQ's default 30 s checks.
        stalledInterval: Math.min(o.lockDurationMs, 30_000),
        maxStalledCount: 1,
        autorun: true,
      },
    );
    worker.on('error', (err) => o.log.error({ err }, 'image worker error'));
    subscriber.on('message', (ch, jobId) => {
      if (ch === channel && worker.cancelJob(jobId, 'cancelled by the api role')) {
        o.log.info({ jobId }, 'image job cancelled');
      }
    });
    await subscriber.subscribe(channel);
    await worker.waitUntilReady();
    return new ImageWorker(worker, subscriber);
  }

  /** Returns the jobs in progress to the queue (see requeueOnShutdown), then stops. */
  async close(): Promise<void> {
    await closeWorkerRequeueing(this.worker);
    this.subscriber.disconnect();
  }
}

export async function processImageJob(
  job: Pick<Job<ImageJobData>, 'id' | 'data'>,
  cancel: AbortSignal | undefined,
  o: Pick<ImageWorkerOptions, 'engines' | 'store' | 'log' | 'clock'>,
): Promise<ImageJobResult> {
  const d = job.data;
  const log = o.log.child({ jobId: job.id, requestId: d.requestId, model: d.model.id });
  const left = d.deadline - Date.now();
  if (left <= 0) return { ok: false, error: ApiError.timeout().toWire() };
  const deadline = AbortSignal.timeout(left);
  const signal = cancel ? AbortSignal.any([cancel, deadline]) : deadline;
  const stored: string[] = [];
  const started = performance.now();
  try {
    const engine = o.engines.get(d.model);
    const images: EngineImage[] = [];
    for (const ref of d.inputs) {
      const img = await o.store.get(ref.id);
      if (!img)
        throw ApiError.invalid(
          'An uploaded image expired before the job ran; send the request again.',
          'image',
        );
      images.push({ bytes: img.bytes, contentType: img.contentType });
    }
    const out: StoredImageRef[] = [];
    for (let i = 0; i < d.n; i++) {
      const { bytes } = await engine.generate(
        {
          operation: d.operation,
          prompt: d.prompt,
          width: d.width,
          height: d.height,
          seed: d.seed + i,
          seedRequested: d.seedRequested,
          guidance: d.guidance,
          images,
        },
        signal,
      );
      if (signal.aborted) throw signal.reason;
      const contentType = sniffImageType(bytes);
      if (!contentType) {
        log.error(
          { bytes: bytes.length },
          'the engine returned something that is not a PNG, JPEG or WebP image',
        );
        throw ApiError.internal('The image model returned something that is not an image.');
      }
      const dims = pngDimensions(bytes);
      const id = newImageId();
      await o.store.put(id, bytes, contentType, d.ttlSeconds);
      stored.push(id);
      out.push({
        id,
        content_type: contentType,
        width: dims?.width ?? null,
        height: dims?.height ?? null,
        expires_at: Math.floor(o.clock.now() / 1000) + d.ttlSeconds,
      });
    }
    log.info({ n: d.n, ms: Math.round(performance.now() - started) }, 'image job done');
    return { ok: true, images: out };
  } catch (e) {
    await Promise.all(stored.map((id) => o.store.delete(id).catch(() => undefined)));
    if (cancel?.aborted) {
      log.info('image job stopped: cancelled');
      return { ok: false, error: new ApiError(499, 'The request was cancelled.').toWire() };
    }
    if (deadline.aborted) return { ok: false, error: ApiError.timeout().toWire() };
    if (!(e instanceof ApiError) || e.status >= 500) log.error({ err: e }, 'image job failed');
    return { ok: false, error: toWire(e) };
  }
}
