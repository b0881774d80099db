import { Queues } from '@infer/contracts';
import { Inject, Injectable } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { BullQueues } from '../../infra/bull-queues.service.js';

/** How many of the latest finished jobs the timings are computed from. */
const RECENT = 200;

export interface Timing {
  p50: number;
  p95: number;
  max: number;
}

export interface JobTimings {
  /** Finished jobs the figures come from (the latest, at most RECENT). */
  jobs: number;
  /** Milliseconds from enqueue to a worker taking the job. */
  wait_ms: Timing | null;
  /** Milliseconds from a worker taking the job to its end (a parent's includes its segments). */
  run_ms: Timing | null;
}

export interface QueueReport {
  name: string;
  /** Paused for every worker (POST /admin/queues/{queue}/pause). */
  paused: boolean;
  /** Jobs by state: waiting, active, waiting-children, delayed, prioritized, completed, failed, paused. */
  counts: Record<string, number>;
  /** Worker connections registered on the queue (BullMQ's CLIENT LIST view). */
  workers: number;
  /** Timings of the latest completed jobs, by job name. */
  recent: Record<string, JobTimings>;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

function timing(values: number[]): Timing | null {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), max: s.at(-1) as number };
}

/** Wait and run times of finished jobs, grouped by job name. */
export function jobTimings(jobs: readonly Pick<Job, 'name' | 'timestamp' | 'processedOn' | 'finishedOn'>[]) {
  const byName = new Map<string, { wait: number[]; run: number[] }>();
  for (const j of jobs) {
    const t = byName.get(j.name) ?? { wait: [], run: [] };
    byName.set(j.name, t);
    if (j.processedOn) t.wait.push(Math.max(0, j.processedOn - j.timestamp));
    if (j.processedOn && j.finishedOn) t.run.push(Math.max(0, j.finishedOn - j.processedOn));
  }
  const out: Record<string, JobTimings> = {};
  for (const [name, t] of byName)
    out[name] = { jobs: t.run.length, wait_ms: timing(t.wait), run_ms: timing(t.run) };
  return out;
}

/**
 * The work behind QueuesAdminController.
 *
 * GET /admin/queues: depth and recent timings of the services' BullMQ queues (today the audio-service's
 * transcriptions), read from Redis, so the view is the same whichever gateway replica answers. Admin
 * credential as the rest of /admin (checkAdmin: `Authorization: Bearer <ADMIN_TOKEN>`).
 */
export type QueueList = { object: 'list'; prefix: string; data: QueueReport[] };

@Injectable()
export class QueuesService {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(BullQueues) private readonly bull: BullQueues,
  ) {}

  private queue(name: string): Promise<Queue> {
    return this.bull.get(name);
  }

  async list(): Promise<QueueList> {
    const data = await Promise.all(Object.values(Queues).map((name) => this.report(name)));
    return { object: 'list', prefix: this.config.BULLMQ_PREFIX, data };
  }

  private async report(name: string): Promise<QueueReport> {
    const q = await this.queue(name);
    const [counts, workers, done, paused] = await Promise.all([
      q.getJobCounts(),
      q.getWorkersCount().catch(() => 0),
      q.getJobs(['completed'], 0, RECENT - 1),
      q.isPaused(),
    ]);
    return { name, paused, counts, workers, recent: jobTimings(done.filter(Boolean)) };
  }
}
