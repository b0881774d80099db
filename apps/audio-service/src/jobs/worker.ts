import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError, Queues } from '@infer/contracts';
import { bullConnection, closeWorkerRequeueing, requeueOnShutdown, watchRedis } from '@infer/rpc';
import { instrumentJobs, type Logger, withJobTrace } from '@infer/telemetry';
import { type Job, type Queue, UnrecoverableError, WaitingChildrenError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { BlobStore } from '../blobs.js';
import type { AudioConfig, Tools } from '../config.js';
import type { EngineRegistry } from '../engines.js';
import { decodeForStt } from '../media/ffmpeg.js';
import { withTempDir } from '../media/process.js';
import { encodeWav, type Segment, slice, wavDuration } from '../media/wav.js';
import type { AudioMetrics } from '../metrics/metrics.js';
import type { TranscriptionEngine } from '../transcription/engine.js';
import { mergePieces } from '../transcription/format.js';
import {
  cancelChannel,
  encodeFailure,
  JobNames,
  type SegmentJobData,
  type SegmentResult,
  type TranscribeJobData,
  type TranscribeResult,
} from './jobs.js';
import { planPieces } from './split.js';

export interface WorkerDeps {
  config: AudioConfig;
  tools: Tools;
  /** Queue of the transcriptions (to add a split file's segments as children). */
  queue: Queue;
  /** A connection for the cancel subscription (duplicated here). */
  redis: Redis;
  blobs: BlobStore;
  engines: EngineRegistry<TranscriptionEngine>;
  metrics: AudioMetrics;
  log: Logger;
}

type AnyJob = Job<TranscribeJobData | SegmentJobData, TranscribeResult | SegmentResult>;

/**
 * The worker role: takes jobs from the `audio-transcriptions` queue.
 *
 * `transcribe` (one per request) runs in two steps. prepare: read the upload from Redis, decode it
 * with ffmpeg to 16 kHz mono (a corrupt or non-audio file fails the job with a 400 `file`), find its
 * speech (split.ts: Silero VAD, pieces ending at pauses, silence left out), and either transcribe it at
 * once (one piece of at most AUDIO_SEGMENT_SECONDS, <= 2 min) or make segments of the pieces, park each in Redis and add one `segment` child job per segment, then wait
 * for the children (BullMQ's waiting-children state holds no worker). merge: collect the children's
 * transcripts and merge them with their offsets.
 *
 * A job whose worker dies loses its lock; the stalled-job check of any live worker puts it back in
 * the queue and another worker runs it again (children have fixed ids, so a re-run prepare adds none
 * twice). Every job gives up at its deadline (524), and is aborted when the api process that waits for
 * it asks (client gone, deadline) on the cancel channel. Client errors and timeouts are not retried.
 */
export class TranscriptionWorker {
  private readonly active = new Map<string, string>(); // job id -> id of its transcribe job
  private constructor(
    private readonly deps: WorkerDeps,
    readonly worker: Worker,
    private readonly sub: Redis,
  ) {}

  static async start(deps: WorkerDeps): Promise<TranscriptionWorker> {
    const { config } = deps;
    const sub = watchRedis(deps.redis.duplicate(), deps.log, 'audio-worker-cancel');
    const holder: { self?: TranscriptionWorker } = {};
    const worker = new Worker(
      Queues.audioTranscriptions,
      // A job cut short by this worker's shutdown goes back to the wait list for another worker.
      requeueOnShutdown(
        instrumentJobs(Queues.audioTranscriptions, (job, token, signal) => {
          const self = holder.self;
          if (!self) throw new Error('worker not ready');
          return self.process(job as AnyJob, token, signal);
        }),
      ),
      {
        connection: bullConnection(config.REDIS_URL),
        prefix: config.BULLMQ_PREFIX,
        name: config.AUDIO_WORKER_NAME,
        concurrency: config.AUDIO_WORKER_CONCURRENCY,
        lockDuration: config.AUDIO_LOCK_DURATION_MS,
        stalledInterval: config.AUDIO_STALLED_INTERVAL_MS,
        maxStalledCount: config.AUDIO_MAX_STALLED_COUNT,
        autorun: false,
      },
    );
    const self = new TranscriptionWorker(deps, worker, sub);
    holder.self = self;
    worker.on('error', (err) => deps.log.error({ err }, 'worker error'));
    worker.on('stalled', (jobId) =>
      deps.log.warn({ jobId }, 'job stalled: its worker stopped renewing the lock; retrying'),
    );
    await sub.subscribe(cancelChannel(config.BULLMQ_PREFIX));
    sub.on('message', (_channel, rootId: string) => self.cancelRoot(rootId));
    void worker.run().catch((err) => deps.log.error({ err }, 'worker stopped'));
    await worker.waitUntilReady();
    deps.log.info(
      {
        queue: Queues.audioTranscriptions,
        concurrency: config.AUDIO_WORKER_CONCURRENCY,
        worker: config.AUDIO_WORKER_NAME,
      },
      'transcription worker ready',
    );
    return self;
  }

  private cancelRoot(rootId: string): void {
    for (const [jobId, root] of this.active) {
      if (root === rootId && this.worker.cancelJob(jobId, 'cancelled')) {
        this.deps.log.info({ jobId, rootId }, 'job cancelled by its requester');
      }
    }
  }

  private async process(job: AnyJob, token: string | undefined, bullSignal: AbortSignal | undefined) {
    const { metrics, log } = this.deps;
    const data = job.data;
    const isSegment = job.name === JobNames.segment;
    const rootId = isSegment ? (data as SegmentJobData).rootId : (job.id as string);
    const started = performance.now();
    if (
      job.processedOn &&
      job.attemptsStarted <= 1 &&
      (isSegment || (data as TranscribeJobData).step === 'prepare')
    ) {
      metrics.jobWait.observe(
        { queue: Queues.audioTranscriptions, name: job.name },
        Math.max(0, job.processedOn - job.timestamp) / 1000,
      );
    }
    this.active.set(job.id as string, rootId);
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(ApiError.timeout('The transcription did not finish before its deadline.')),
      Math.max(0, data.deadline - Date.now()),
    );
    const signal = bullSignal ? AbortSignal.any([timeout.signal, bullSignal]) : timeout.signal;
    let outcome = 'completed';
    try {
      if (Date.now() >= data.deadline)
        throw ApiError.timeout('The transcription did not finish before its deadline.');
      return isSegment
        ? await this.segment(data as SegmentJobData, signal)
        : await this.transcribe(job as Job<TranscribeJobData, TranscribeResult>, token, signal);
    } catch (e) {
      if (e instanceof WaitingChildrenError) {
        outcome = 'waiting-children';
        throw e;
      }
      outcome = 'failed';
      throw this.failure(e, signal, job, log);
    } finally {
      clearTimeout(timer);
      this.active.delete(job.id as string);
      metrics.jobDuration.observe(
        { queue: Queues.audioTranscriptions, name: job.name, outcome },
        (performance.now() - started) / 1000,
      );
    }
  }

  /**
   * What a failed job leaves in `failedReason`: an ApiError (marked, for the api role to answer with).
   * Client errors, timeouts and cancels are final; server errors and unexpected ones are retried.
   */
  private failure(e: unknown, signal: AbortSignal, job: AnyJob, log: Logger): Error {
    let api: ApiError | null = e instanceof ApiError ? e : null;
    if (signal.aborted && !api) {
      const r = signal.reason;
      api =
        r instanceof ApiError ? r : new ApiError(499, 'The transcription was cancelled by its requester.');
    }
    if (api) {
      const final = api.status < 500 || api.status === 524 || signal.aborted;
      if (!final) log.error({ err: api, jobId: job.id }, 'job failed, will be retried if attempts remain');
      return final ? new UnrecoverableError(encodeFailure(api)) : new Error(encodeFailure(api));
    }
    log.error(
      { err: e, jobId: job.id, name: job.name },
      'job failed unexpectedly, will be retried if attempts remain',
    );
    return e instanceof Error ? e : new Error(String(e));
  }

  private async transcribe(
    job: Job<TranscribeJobData, TranscribeResult>,
    token: string | undefined,
    signal: AbortSignal,
  ): Promise<TranscribeResult> {
    const { blobs, config, tools, engines, metrics, queue } = this.deps;
    let data = job.data;
    const engine = engines.get(data.model);
    if (data.step === 'prepare') {
      const upload = await blobs.get(data.upload.key);
      if (!upload) {
        throw ApiError.internal(
          'The uploaded file is no longer available (it expired before a worker took the job).',
        );
      }
      const single = await withTempDir(tools.tmpDir, async (dir) => {
        const input = join(dir, 'upload');
        await writeFile(input, upload);
        const { pcm, path } = await decodeForStt(tools.ffmpeg, input, dir, {
          maxSeconds: config.AUDIO_MAX_DURATION_SECONDS,
          signal,
        });
        const duration = wavDuration(pcm);
        const plan = await planPieces(pcm, config, signal, this.deps.log);
        if (plan.length === 0) {
          // No speech found: nothing to recognise (the audio's duration is still what is billed).
          metrics.transcribedAudio.inc(duration);
          return mergePieces([], duration, data.language);
        }
        if (plan.length === 1) {
          const [s] = plan as [Segment];
          const whole = s.from === 0 && s.to * 2 * pcm.channels >= pcm.data.length;
          const wav = whole ? await readFile(path) : encodeWav(slice(pcm, s.from, s.to));
          const wavPath = whole ? path : join(dir, 'speech.wav');
          if (!whole) await writeFile(wavPath, wav);
          const transcript = await engine.transcribe(
            { wavPath, wav, duration: (s.to - s.from) / pcm.sampleRate, ...hints(data) },
            signal,
          );
          metrics.transcribedAudio.inc(duration);
          return mergePieces(
            [{ index: 0, offset: s.from / pcm.sampleRate, transcript }],
            duration,
            data.language,
          );
        }
        // Long audio: park each segment in Redis and hand it to a child job (any worker may take it).
        const ttl = Math.max(60_000, data.deadline - Date.now() + 60_000);
        const keys = plan.map((s) => blobs.key('segment', `${job.id}-${s.index}`));
        await Promise.all(
          plan.map((s, i) =>
            blobs.put(keys[i] as string, encodeWav(slice(pcm, s.from, s.to)), 'audio/wav', ttl),
          ),
        );
        await queue.addBulk(
          plan.map((s, i) => ({
            name: JobNames.segment,
            data: withJobTrace({
              rootId: job.id as string,
              requestId: data.requestId,
              model: data.model,
              key: keys[i] as string,
              index: s.index,
              offset: s.from / pcm.sampleRate,
              duration: (s.to - s.from) / pcm.sampleRate,
              deadline: data.deadline,
              ...hints(data),
            } satisfies SegmentJobData),
            opts: {
              jobId: `${job.id}-seg-${s.index}`,
              parent: { id: job.id as string, queue: job.queueQualifiedName },
              failParentOnFailure: true,
              attempts: config.AUDIO_JOB_ATTEMPTS,
              backoff: { type: 'fixed', delay: 1_000 },
              removeOnComplete: { age: 3_600, count: 1_000 },
              removeOnFail: { age: 86_400, count: 5_000 },
            },
          })),
        );
        data = { ...data, step: 'merge', duration, segmentKeys: keys };
        await job.updateData(data);
        this.deps.log.info(
          { jobId: job.id, requestId: data.requestId, duration, segments: plan.length },
          'long audio split into segments',
        );
        return null;
      });
      if (single) return single;
    }
    if (token && (await job.moveToWaitingChildren(token))) throw new WaitingChildrenError();
    return this.merge(job, data);
  }

  private async merge(
    job: Job<TranscribeJobData, TranscribeResult>,
    data: TranscribeJobData,
  ): Promise<TranscribeResult> {
    const values = Object.values(await job.getChildrenValues<SegmentResult>());
    const keys = data.segmentKeys ?? [];
    if (values.length !== keys.length || data.duration === undefined) {
      throw ApiError.internal('A transcription lost segments on the way.');
    }
    const pieces = [];
    for (const v of values) {
      if ('error' in v) throw ApiError.fromWire(v.error);
      pieces.push(v);
    }
    await this.deps.blobs.del(...keys);
    return mergePieces(pieces, data.duration, data.language);
  }

  private async segment(data: SegmentJobData, signal: AbortSignal): Promise<SegmentResult> {
    const { blobs, tools, engines, metrics } = this.deps;
    const engine = engines.get(data.model);
    const wav = await blobs.get(data.key);
    if (!wav) throw ApiError.internal('A segment of the audio is no longer available (it expired).');
    const transcript = await withTempDir(tools.tmpDir, async (dir) => {
      const path = join(dir, 'segment.wav');
      await writeFile(path, wav);
      return engine.transcribe({ wavPath: path, wav, duration: data.duration, ...hints(data) }, signal);
    });
    metrics.transcribedAudio.inc(data.duration);
    return { index: data.index, offset: data.offset, transcript };
  }

  /** Returns the jobs in progress to the queue (see requeueOnShutdown), then stops. */
  async close(): Promise<void> {
    await closeWorkerRequeueing(this.worker);
    this.sub.disconnect();
  }
}

function hints(d: { language?: string; prompt?: string; temperature?: number }) {
  return {
    ...(d.language !== undefined ? { language: d.language } : {}),
    ...(d.prompt !== undefined ? { prompt: d.prompt } : {}),
    ...(d.temperature !== undefined ? { temperature: d.temperature } : {}),
  };
}
