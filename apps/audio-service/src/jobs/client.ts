import { randomUUID } from 'node:crypto';
import { ApiError, Queues } from '@infer/contracts';
import { untilAborted } from '@infer/rpc';
import { type Logger, withJobTrace } from '@infer/telemetry';
import type { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  cancelChannel,
  decodeFailure,
  failedChildId,
  JobNames,
  type TranscribeJobData,
  type TranscribeResult,
} from './jobs.js';

/**
 * The api role's side of the queue: enqueue a transcription, wait for its result (QueueEvents), and
 * when the wait is given up (deadline, client gone) remove the job if no worker holds it yet and tell
 * the workers to abort it (and its segments) through the cancel channel.
 */
export class TranscriptionJobs {
  constructor(
    private readonly queue: Queue,
    private readonly events: QueueEvents,
    private readonly publisher: Redis,
    private readonly prefix: string,
    private readonly attempts: number,
    private readonly log: Logger,
  ) {}

  async run(data: Omit<TranscribeJobData, 'step'>, signal: AbortSignal): Promise<TranscribeResult> {
    if (signal.aborted) throw signal.reason;
    const jobId = `tx-${randomUUID()}`;
    const job = await this.queue.add(
      JobNames.transcribe,
      withJobTrace({ ...data, step: 'prepare' } satisfies TranscribeJobData),
      {
        jobId,
        attempts: this.attempts,
        backoff: { type: 'fixed', delay: 1_000 },
        removeOnComplete: { age: 3_600, count: 1_000 },
        removeOnFail: { age: 86_400, count: 5_000 },
      },
    );
    this.log.debug({ jobId, requestId: data.requestId }, 'transcription job queued');
    // A ttl a little past the deadline, so the listeners never outlive the request.
    const finished = job.waitUntilFinished(this.events, Math.max(1_000, data.deadline - Date.now() + 5_000));
    finished.catch(() => undefined);
    try {
      return (await untilAborted(finished, signal)) as TranscribeResult;
    } catch (e) {
      if (signal.aborted) {
        await this.cancel(jobId);
        throw signal.reason;
      }
      throw await this.explain(jobId, e);
    }
  }

  /** Stops a job: removed when waiting; an active one (and its segments) is aborted by its worker. */
  async cancel(jobId: string): Promise<void> {
    try {
      await this.publisher.publish(cancelChannel(this.prefix), jobId);
      await this.queue.remove(jobId, { removeChildren: true });
    } catch (err) {
      // Locked by a worker: the cancel message reaches it and it fails the job itself.
      this.log.debug({ err, jobId }, 'job not removed');
    }
  }

  /** The ApiError a failed job carries (its own, or that of the segment that failed it). */
  private async explain(jobId: string, e: unknown): Promise<ApiError> {
    const job = await this.queue.getJob(jobId).catch(() => undefined);
    const reason = job?.failedReason ?? (e as Error)?.message;
    const own = decodeFailure(reason);
    if (own) return own;
    const childId = failedChildId(reason);
    if (childId) {
      const child = await this.queue.getJob(childId).catch(() => undefined);
      const fromChild = decodeFailure(child?.failedReason);
      if (fromChild) return fromChild;
    }
    this.log.error({ jobId, reason, queue: Queues.audioTranscriptions }, 'transcription job failed');
    return ApiError.internal();
  }
}
