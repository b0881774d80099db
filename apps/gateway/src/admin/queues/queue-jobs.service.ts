import {
  ApiError,
  parseOrThrow,
  type QueueJobDetail,
  QueueJobsQuerySchema,
  type QueueJobView,
  Queues,
  WireErrorSchema,
} from '@infer/contracts';
import { Inject, Injectable } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { BullQueues } from '../../infra/bull-queues.service.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';

const NAMES = new Set<string>(Object.values(Queues));
const JOB_ID = /^[A-Za-z0-9:_-]{1,200}$/;

/**
 * The work behind QueueJobsController (queue-jobs.controller.ts).
 *
 * Jobs of the services' BullMQ queues for the operator console: list by state (failed first, with
 * their error), retry a failed job, remove a job. Reads need any role, retry/remove need admin; both
 * are audited. (GET /admin/queues, the counts, lives in admin-queues/.)
 *   GET    /admin/queues/{queue}/jobs?state=failed&start=0&limit=20
 *   GET    /admin/queues/{queue}/jobs/{id}          one job: state, attempts, error, data summary
 *   POST   /admin/queues/{queue}/jobs/{id}/retry
 *   POST   /admin/queues/{queue}/pause              workers take no new job until resumed
 *   POST   /admin/queues/{queue}/resume
 *   DELETE /admin/queues/{queue}/jobs/{id}
 */
@Injectable()
export class QueueJobsService {
  constructor(
    @Inject(BullQueues) private readonly bull: BullQueues,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {}

  private queue(name: string): Promise<Queue> {
    if (!NAMES.has(name)) {
      throw new ApiError(404, `No queue '${name}' (queues: ${[...NAMES].join(', ')}).`, {
        type: 'invalid_request_error',
        code: 'not_found',
        param: 'queue',
      });
    }
    return this.bull.get(name);
  }

  private async job(name: string, id: string): Promise<Job> {
    const q = await this.queue(name);
    const job = JOB_ID.test(id) ? await q.getJob(id) : undefined;
    if (!job) {
      throw new ApiError(404, `No job '${id}' in queue '${name}'.`, {
        type: 'invalid_request_error',
        code: 'not_found',
        param: 'id',
      });
    }
    return job;
  }

  async list(name: string, query: unknown) {
    const q = parseOrThrow(QueueJobsQuerySchema, query ?? {});
    const queue = await this.queue(name);
    const jobs = await queue.getJobs([q.state], q.start, q.start + q.limit - 1);
    const total = (await queue.getJobCounts(q.state))[q.state] ?? 0;
    return {
      object: 'list' as const,
      state: q.state,
      total,
      data: jobs.filter(Boolean).map((j) => view(name, j, q.state)),
    };
  }

  async find(name: string, id: string): Promise<QueueJobDetail> {
    const job = await this.job(name, id);
    const state = await job.getState();
    return {
      ...view(name, job, state),
      data_summary: summarize(job.data),
      attempts_allowed: job.opts.attempts ?? 1,
      processed_at: job.processedOn ?? null,
      stacktrace: (job.stacktrace ?? []).slice(-3).map((t) => String(t).split('\n').slice(0, 6).join('\n')),
      progress: job.progress ?? null,
    };
  }

  pause(actor: AdminActor, name: string) {
    return this.setPaused(actor, name, true);
  }

  resume(actor: AdminActor, name: string) {
    return this.setPaused(actor, name, false);
  }

  /** Pauses or resumes a queue for every worker (BullMQ's global pause, kept in Redis); audited. */
  private async setPaused(actor: AdminActor, name: string, paused: boolean) {
    const q = await this.queue(name);
    const before = await q.isPaused();
    if (before !== paused) {
      // The queue's state lives in Redis: its audit row commits only once the change succeeded.
      await this.access.auditedOutside(
        actor,
        {
          action: paused ? 'queue.pause' : 'queue.resume',
          targetType: 'queue',
          targetId: name,
          before: { paused: before },
          after: { paused },
        },
        () => (paused ? q.pause() : q.resume()),
      );
    }
    return { object: 'queue' as const, name, paused: await q.isPaused() };
  }

  async retry(actor: AdminActor, name: string, id: string) {
    const job = await this.job(name, id);
    const state = await job.getState();
    if (state !== 'failed') {
      throw new ApiError(409, `Job '${id}' is ${state}; only a failed job can be retried.`, {
        type: 'invalid_request_error',
        code: 'job_not_failed',
        param: 'id',
      });
    }
    const before = view(name, job, state);
    if (!before.retryable) {
      throw new ApiError(
        409,
        `Job '${id}' failed for good: ${before.error?.message ?? 'its error is final'} A retry would fail the same way.`,
        { type: 'invalid_request_error', code: 'job_not_retryable', param: 'id' },
      );
    }
    // The job lives in Redis: its audit row commits only once the retry succeeded (auditedOutside).
    await this.access.auditedOutside(
      actor,
      {
        action: 'queue.retry',
        targetType: 'queue_job',
        targetId: `${name}/${id}`,
        before: { state, failed_reason: before.failed_reason, attempts_made: before.attempts_made },
        after: { state: 'waiting' },
      },
      // A fresh set of attempts: the count never runs past the job's maximum ("4 of 2").
      () => job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true }),
    );
    return { object: 'queue.job.retried' as const, id, queue: name };
  }

  async remove(actor: AdminActor, name: string, id: string) {
    const job = await this.job(name, id);
    const state = await job.getState();
    if (state === 'active') {
      throw new ApiError(409, `Job '${id}' is running; it cannot be removed now.`, {
        type: 'invalid_request_error',
        code: 'job_active',
        param: 'id',
      });
    }
    await this.access.auditedOutside(
      actor,
      {
        action: 'queue.remove',
        targetType: 'queue_job',
        targetId: `${name}/${id}`,
        before: { state, name: job.name, failed_reason: job.failedReason ?? null },
      },
      () => job.remove(),
    );
    return { object: 'queue.job.deleted' as const, id, queue: name };
  }
}

/**
 * What the console shows of a job's data: every top-level field with its type, numbers and booleans
 * as they are, strings up to 80 characters (longer ones, e.g. base64 audio, by their length only),
 * arrays and objects by their size. At most 30 fields.
 */
export function summarize(data: unknown): Record<string, string> {
  if (data === null || typeof data !== 'object') return { value: describe(data) };
  const out: Record<string, string> = {};
  const entries = Object.entries(data as Record<string, unknown>);
  for (const [k, v] of entries.slice(0, 30)) out[k] = describe(v);
  if (entries.length > 30) out['…'] = `${entries.length - 30} more fields`;
  return out;
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  if (typeof v === 'string') return v.length <= 80 ? JSON.stringify(v) : `string (${v.length} characters)`;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `array (${v.length} items)`;
  if (typeof v === 'object') return `object (${Object.keys(v).length} fields)`;
  return typeof v;
}

/** What a worker leaves in `failedReason` for an API error: `ApiError:` and the error's wire form. */
const API_ERROR_MARK = 'ApiError:';

/** The failure in words: the API error's message, code and status, or the raw reason as a sentence. */
export function failureOf(reason: string | undefined | null): QueueJobView['error'] {
  if (!reason) return null;
  if (reason.startsWith(API_ERROR_MARK)) {
    try {
      const w = WireErrorSchema.parse(JSON.parse(reason.slice(API_ERROR_MARK.length)));
      return { message: asSentence(w.message), code: w.code, status: w.status };
    } catch {
      // not ours after all: shown as it is
    }
  }
  return { message: asSentence(reason), code: null, status: null };
}

const asSentence = (t: string) => {
  const s = t.trim();
  const first = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
};

/**
 * A failed job can succeed on a retry unless its failure was final: the worker threw BullMQ's
 * UnrecoverableError (the audio worker does for client errors, timeouts and cancels), seen in its
 * last stack trace, or left an API error a retry cannot change (4xx, 524).
 */
export function retryable(j: Pick<Job, 'failedReason' | 'stacktrace'>, state: string): boolean {
  if (state !== 'failed') return false;
  if (String(j.stacktrace?.at(-1) ?? '').startsWith('UnrecoverableError')) return false;
  const status = failureOf(j.failedReason)?.status;
  return !(status != null && (status < 500 || status === 524));
}

function view(queue: string, j: Job, state: string): QueueJobView {
  return {
    object: 'queue.job',
    id: String(j.id),
    name: j.name,
    queue,
    state,
    attempts_made: j.attemptsMade,
    failed_reason: j.failedReason ?? null,
    error: failureOf(j.failedReason),
    retryable: retryable(j, state),
    created_at: j.timestamp,
    finished_at: j.finishedOn ?? null,
  };
}
