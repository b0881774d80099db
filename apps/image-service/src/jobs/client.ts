import { randomUUID } from 'node:crypto';
import { ApiError, type StoredImageRef } from '@infer/contracts';
import { untilAborted } from '@infer/rpc';
import { type Logger, withJobTrace } from '@infer/telemetry';
import type { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { cancelChannel, IMAGE_JOB, type ImageJobData, type ImageJobResult } from './jobs.js';

/**
 * The api role's side of the queue: enqueue one job per request, wait for its result (QueueEvents),
 * and when the wait is given up (deadline, client gone) remove the job if no worker holds it yet and
 * tell the workers to abort it through the cancel channel.
 */
export class ImageJobs {
  constructor(
    private readonly queue: Queue,
    private readonly events: QueueEvents,
    private readonly publisher: Redis,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {}

  async run(data: ImageJobData, signal: AbortSignal): Promise<StoredImageRef[]> {
    if (signal.aborted) throw signal.reason;
    const jobId = `img-${randomUUID()}`;
    const job = await this.queue.add(IMAGE_JOB, withJobTrace(data), {
      jobId,
      // Engines fail for reasons a retry does not fix (bad input, refusals); a worker that dies is
      // covered by BullMQ's stalled-job recovery instead.
      attempts: 1,
      removeOnComplete: { age: 600, count: 1_000 },
      removeOnFail: { age: 86_400, count: 5_000 },
    });
    this.log.debug({ jobId, requestId: data.requestId, n: data.n }, 'image job queued');
    const finished = job.waitUntilFinished(this.events, Math.max(1_000, data.deadline - Date.now() + 5_000));
    finished.catch(() => undefined);
    let result: ImageJobResult;
    try {
      result = (await untilAborted(finished, signal)) as ImageJobResult;
    } catch (e) {
      if (signal.aborted) {
        await this.cancel(jobId);
        throw signal.reason;
      }
      this.log.error({ jobId, err: (e as Error)?.message }, 'image job failed');
      throw ApiError.internal();
    }
    if (!result?.ok) throw result?.error ? ApiError.fromWire(result.error) : ApiError.internal();
    return result.images;
  }

  /** Stops a job: removed when still waiting; an active one is aborted by its worker. */
  async cancel(jobId: string): Promise<void> {
    try {
      await this.publisher.publish(cancelChannel(this.prefix, this.queue.name), jobId);
      await this.queue.remove(jobId);
    } catch (err) {
      this.log.debug(
        { err, jobId },
        'image job not removed (a worker holds it; the cancel message stops it)',
      );
    }
  }
}
