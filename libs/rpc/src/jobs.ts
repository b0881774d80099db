import type { Job } from 'bullmq';

// BullMQ is loaded when a worker first needs its error classes (workers have it loaded anyway), so
// that the apps importing this kit without running a worker (the gateway) do not load it at start-up.
const bull = () => import('bullmq');

/** The reason a worker gives BullMQ when it cancels its jobs because it is shutting down. */
export const WORKER_SHUTDOWN = 'worker shutting down';

type Processor<R> = (job: Job, token: string | undefined, signal: AbortSignal | undefined) => Promise<R>;

/**
 * Wraps a BullMQ processor so that a job cut short by the worker's shutdown (the worker called
 * `cancelAllJobs(WORKER_SHUTDOWN)`) goes back to the wait list, without using up an attempt, for
 * another worker to run, instead of failing or waiting for its lock to expire.
 */
export function requeueOnShutdown<R>(processor: Processor<R>): Processor<R> {
  return async (job, token, signal) => {
    let result: R;
    try {
      result = await processor(job, token, signal);
    } catch (e) {
      const { DelayedError, RateLimitError, WaitingChildrenError, WaitingError } = await bull();
      // The processor already moved the job (to wait for its children, to a delay ...): leave it there.
      const moved =
        e instanceof WaitingChildrenError ||
        e instanceof DelayedError ||
        e instanceof WaitingError ||
        e instanceof RateLimitError;
      if (!moved && signal?.reason === WORKER_SHUTDOWN) await requeue(job, token);
      throw e;
    }
    if (signal?.reason === WORKER_SHUTDOWN) await requeue(job, token);
    return result;
  };
}

async function requeue(job: Job, token: string | undefined): Promise<never> {
  await job.moveToWait(token);
  const { WaitingError } = await bull();
  throw new WaitingError();
}

/**
 * Stops a worker for a shutdown: cancels its active jobs (which requeueOnShutdown returns to the wait
 * list), then closes it, waiting for those processors to return.
 */
export async function closeWorkerRequeueing(worker: {
  cancelAllJobs(reason?: string): void;
  close(force?: boolean): Promise<void>;
}): Promise<void> {
  worker.cancelAllJobs(WORKER_SHUTDOWN);
  await worker.close();
}
