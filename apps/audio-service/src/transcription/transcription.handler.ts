import {
  ApiError,
  type EndFrame,
  parseOrThrow,
  type TranscriptionServiceBody,
  TranscriptionServiceBodySchema,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import type { EngineRegistry } from '../engines.js';
import type { TranscriptionJobs } from '../jobs/client.js';
import type { AudioMetrics } from '../metrics/metrics.js';
import { checkLanguage, type TranscriptionEngine } from './engine.js';
import { toResponse } from './format.js';

export interface TranscriptionDeps {
  engines: EngineRegistry<TranscriptionEngine>;
  jobs: TranscriptionJobs;
  metrics: AudioMetrics;
  /** Default longest job (AUDIO_JOB_TIMEOUT_MS) when the model sets no `job_timeout_ms`. */
  jobTimeoutMs: number;
}

/**
 * `infer.audio.transcriptions`: checks the language against the model's engine (400 `language`),
 * queues a transcription job and waits for it until the earlier of the request's deadline and the
 * model's job timeout (then 524), and shapes the result per `response_format`.
 * Usage: `prompt_tokens` = seconds of audio (rounded up), `completion_tokens` = words of the transcript.
 */
export function transcriptionHandler(deps: TranscriptionDeps): RpcHandler<TranscriptionServiceBody> {
  return async (req, ctx): Promise<EndFrame> => {
    const body = parseOrThrow(TranscriptionServiceBodySchema, req.body);
    const engine = deps.engines.get(req.model);
    checkLanguage(engine, req.model.id, body.language);
    const limitMs = engine.jobTimeoutMs ?? deps.jobTimeoutMs;
    const deadline = Math.min(req.deadline, Date.now() + limitMs);
    const allowed = Math.max(0, deadline - Date.now());
    const timeout = new AbortController();
    const timer = setTimeout(
      () =>
        timeout.abort(
          ApiError.timeout(
            `The transcription did not finish within ${Math.ceil(allowed / 1000)} seconds. Long audio is split into segments of at most 2 minutes that run in parallel; retry later, or send shorter audio.`,
          ),
        ),
      allowed,
    );
    const started = performance.now();
    let outcome = 'error';
    try {
      const merged = await deps.jobs.run(
        {
          requestId: req.requestId,
          model: req.model,
          upload: body.file,
          deadline,
          ...(body.language !== undefined ? { language: body.language } : {}),
          ...(body.prompt !== undefined ? { prompt: body.prompt } : {}),
          ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
        },
        AbortSignal.any([ctx.signal, timeout.signal]),
      );
      const data = toResponse(merged, body.response_format, body.timestamp_granularities);
      const words = merged.segments.reduce(
        (n, s) => n + (s.words.length || s.text.split(/\s+/).filter(Boolean).length),
        0,
      );
      const seconds = Math.ceil(merged.duration);
      outcome = 'ok';
      return {
        data,
        usage: { prompt_tokens: seconds, completion_tokens: words, total_tokens: seconds + words },
      };
    } catch (e) {
      if (e instanceof ApiError)
        outcome = e.status === 524 ? 'timeout' : e.status < 500 ? 'rejected' : 'error';
      throw e;
    } finally {
      clearTimeout(timer);
      deps.metrics.transcriptionDuration.observe({ outcome }, (performance.now() - started) / 1000);
    }
  };
}
