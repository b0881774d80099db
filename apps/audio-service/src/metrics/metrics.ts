import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

const SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * The audio-service's Prometheus metrics, one registry per service instance. Queue depth is read from
 * Redis at scrape time (so it is the queue's, whichever replica is scraped); job timings are observed
 * by the workers of this process, request timings by its api role.
 */
export class AudioMetrics {
  readonly registry = new Registry();
  private queueCounts: (() => Promise<Record<string, Record<string, number>>>) | null = null;

  readonly queueJobs = new Gauge({
    name: 'audio_queue_jobs',
    help: 'Jobs in each BullMQ queue of the audio service, by state (read from Redis at scrape time).',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
    collect: async () => {
      if (!this.queueCounts) return;
      this.queueJobs.reset();
      try {
        for (const [queue, counts] of Object.entries(await this.queueCounts())) {
          for (const [state, n] of Object.entries(counts)) this.queueJobs.set({ queue, state }, n);
        }
      } catch {
        // Redis unreachable during a scrape: the gauge is left empty rather than failing /metrics.
      }
    },
  });

  readonly jobDuration = new Histogram({
    name: 'audio_job_duration_seconds',
    help: 'Time a worker of this process spent on a job, by job name and outcome.',
    labelNames: ['queue', 'name', 'outcome'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly jobWait = new Histogram({
    name: 'audio_job_wait_seconds',
    help: 'Time a job waited in the queue before a worker of this process took it.',
    labelNames: ['queue', 'name'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly transcriptionDuration = new Histogram({
    name: 'audio_transcription_request_seconds',
    help: 'Transcription requests answered by this api process, end to end (queue wait included), by outcome.',
    labelNames: ['outcome'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  readonly transcribedAudio = new Counter({
    name: 'audio_transcribed_audio_seconds_total',
    help: 'Seconds of audio transcribed by the workers of this process.',
    registers: [this.registry],
  });

  readonly speechDuration = new Histogram({
    name: 'audio_speech_request_seconds',
    help: 'Speech syntheses of this api process, by engine, format and outcome.',
    labelNames: ['engine', 'format', 'outcome'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'audio_' });
  }

  /** Where queue depth comes from (the roles that hold a BullMQ Queue set it). */
  readQueuesWith(fn: () => Promise<Record<string, Record<string, number>>>): void {
    this.queueCounts = fn;
  }
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** GET /metrics on its own small HTTP port (no other route). */
export async function startMetricsServer(
  metrics: AudioMetrics,
  port: number,
  host: string,
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.registry
      .metrics()
      .then((body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body))
      .catch(() => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  const p = typeof addr === 'object' && addr ? addr.port : port;
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    url: `http://${h}:${p}/metrics`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
