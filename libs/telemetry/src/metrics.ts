import type { EndFrame, ServiceRequest } from '@infer/contracts';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's GenAI and job metrics (Prometheus), served by the ops server's /metrics next to its
 * own. Labels are bounded: operation (a fixed set), model (the catalog's ids), outcome, error code,
 * queue and job names; never member or key ids.
 */
export const telemetryRegistry = new Registry();

const LATENCY = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const PER_TOKEN = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export const genAiMetrics = {
  duration: new Histogram({
    name: 'gen_ai_server_request_duration_seconds',
    help: 'Model work in a service, from the request to its end frame (gen_ai.server.request.duration)',
    labelNames: ['operation', 'model', 'outcome'] as const,
    buckets: LATENCY,
    registers: [telemetryRegistry],
  }),
  ttft: new Histogram({
    name: 'gen_ai_server_time_to_first_token_seconds',
    help: 'Streams: time from the request to the first chunk the engine produced (gen_ai.server.time_to_first_token)',
    labelNames: ['operation', 'model'] as const,
    buckets: LATENCY,
    registers: [telemetryRegistry],
  }),
  tpot: new Histogram({
    name: 'gen_ai_server_time_per_output_token_seconds',
    help: 'Streams: time per output token after the first (gen_ai.server.time_per_output_token)',
    labelNames: ['operation', 'model'] as const,
    buckets: PER_TOKEN,
    registers: [telemetryRegistry],
  }),
  tokens: new Counter({
    name: 'gen_ai_server_tokens_total',
    help: 'Tokens the services reported, by operation, model and type (input, output)',
    labelNames: ['operation', 'model', 'type'] as const,
    registers: [telemetryRegistry],
  }),
  errors: new Counter({
    name: 'gen_ai_server_errors_total',
    help: 'Requests a service answered with an error, by operation and error code',
    labelNames: ['operation', 'code'] as const,
    registers: [telemetryRegistry],
  }),
};

/**
 * Records one service request: duration and outcome; for streams, time to first chunk and time per
 * output token; the tokens of its usage. `firstAt` is performance.now() at the first chunk (0: none).
 */
export function recordGenAi(
  operation: string,
  req: ServiceRequest<unknown>,
  startedAt: number,
  firstAt: number,
  end: EndFrame | null,
  error: unknown,
): void {
  const model = req.model.id;
  const now = performance.now();
  genAiMetrics.duration.observe(
    { operation, model, outcome: end ? 'ok' : 'error' },
    (now - startedAt) / 1000,
  );
  if (!end) {
    const e = error as { code?: unknown; status?: unknown } | null;
    const code =
      typeof e?.code === 'string' && e.code.length <= 40 ? e.code : String(e?.status ?? 'internal');
    genAiMetrics.errors.inc({ operation, code });
    return;
  }
  const u = end.usage;
  if (firstAt > 0) {
    genAiMetrics.ttft.observe({ operation, model }, (firstAt - startedAt) / 1000);
    if (u && u.completion_tokens > 1) {
      genAiMetrics.tpot.observe({ operation, model }, (now - firstAt) / 1000 / (u.completion_tokens - 1));
    }
  }
  if (u) {
    if (u.prompt_tokens > 0) genAiMetrics.tokens.inc({ operation, model, type: 'input' }, u.prompt_tokens);
    if (u.completion_tokens > 0)
      genAiMetrics.tokens.inc({ operation, model, type: 'output' }, u.completion_tokens);
  }
}

export const jobMetrics = {
  duration: new Histogram({
    name: 'infer_bullmq_job_duration_seconds',
    help: 'Time a worker spent on one run of a BullMQ job, by queue, job name and outcome',
    labelNames: ['queue', 'name', 'outcome'] as const,
    buckets: LATENCY,
    registers: [telemetryRegistry],
  }),
};

interface CountableQueue {
  readonly name: string;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
}

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'failed'] as const;
const watched = new Set<CountableQueue>();

new Gauge({
  name: 'infer_bullmq_queue_jobs',
  help: 'Jobs in each BullMQ queue by state (read at scrape time)',
  labelNames: ['queue', 'state'] as const,
  registers: [telemetryRegistry],
  async collect() {
    for (const q of watched) {
      try {
        const counts = await q.getJobCounts(...QUEUE_STATES);
        for (const state of QUEUE_STATES) this.set({ queue: q.name, state }, counts[state] ?? 0);
      } catch {
        // Redis unreachable during a scrape: leave the last values
      }
    }
  },
});

/** Exports the queue's depth by state on /metrics (infer_bullmq_queue_jobs); returns an unwatch. */
export function watchQueue(queue: CountableQueue): () => void {
  watched.add(queue);
  return () => watched.delete(queue);
}
