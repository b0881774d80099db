import { ApiError, type CatalogEntry, OpenAIUpstreamEngineSchema } from '@infer/contracts';
import { EndpointFailure, type EnginePool } from '@infer/engine-pool';
import { parseEngineSettings } from '@infer/runtime';
import { z } from 'zod';
import {
  audioPool,
  authorization,
  type EngineFactory,
  poolFetchFailure,
  poolStatusFailure,
  upstreamUrl,
} from '../engines.js';
import type {
  TranscribeInput,
  Transcript,
  TranscriptionEngine,
  TranscriptSegment,
  TranscriptWord,
} from './engine.js';
import { toIso6391 } from './languages.js';
import { compressionRatio, round3 } from './pocketsphinx.js';

/**
 * `openai`: any OpenAI-compatible transcription server (speaches / faster-whisper-server, whisper.cpp
 * server, vLLM, LocalAI ...). Each segment (<= 2 min, 16 kHz mono WAV) is sent as
 * POST {base_url}/audio/transcriptions (multipart: file, model, response_format=verbose_json,
 * timestamp_granularities[]=segment and word, language, temperature, prompt), and its verbose_json
 * (segments, words at the top level or inside segments, language as a code or an English name) is
 * normalized. A server that answers only `{text}` gives one segment spanning the audio.
 */
export const UpstreamTranscriptionSettingsSchema = OpenAIUpstreamEngineSchema.extend({
  /** Longest a transcription job of this model may take (524 after it); default AUDIO_JOB_TIMEOUT_MS. */
  job_timeout_ms: z.number().int().min(100).optional(),
  /** ISO-639-1 codes the upstream model transcribes; default any. */
  languages: z
    .array(z.string().regex(/^[a-z]{2}$/))
    .min(1)
    .optional(),
});
export type UpstreamTranscriptionSettings = z.infer<typeof UpstreamTranscriptionSettingsSchema>;

const num = z.coerce.number().catch(0);
const UpstreamWordSchema = z.object({
  word: z.string().catch(''),
  start: num,
  end: num,
  probability: z.coerce.number().min(0).max(1).catch(1),
});
const UpstreamSegmentSchema = z.object({
  start: num,
  end: num,
  text: z.string().catch(''),
  tokens: z.array(z.number().int()).catch([]),
  temperature: z.number().optional().catch(undefined),
  avg_logprob: z.number().optional().catch(undefined),
  compression_ratio: z.number().optional().catch(undefined),
  no_speech_prob: z.number().optional().catch(undefined),
  words: z.array(UpstreamWordSchema).optional().catch(undefined),
});
const UpstreamVerboseSchema = z.object({
  text: z.string(),
  language: z.string().nullish(),
  duration: z.coerce.number().optional().catch(undefined),
  segments: z.array(UpstreamSegmentSchema).nullish().catch(undefined),
  words: z.array(UpstreamWordSchema).nullish().catch(undefined),
});

/** An upstream's verbose_json -> Transcript (times clamped into [0, duration], words put in their segments). */
export function normalizeUpstream(
  raw: unknown,
  input: { duration: number; language?: string; temperature?: number },
): Transcript {
  const r = UpstreamVerboseSchema.safeParse(raw);
  if (!r.success)
    throw ApiError.internal('The transcription upstream answered something that is not a transcription.');
  const v = r.data;
  const duration = input.duration;
  const clamp = (t: number) => round3(Math.min(Math.max(0, t), duration));
  const topWords: TranscriptWord[] = (v.words ?? []).map((w) => ({
    word: w.word.trim(),
    start: clamp(w.start),
    end: clamp(Math.max(w.start, w.end)),
    probability: w.probability,
  }));
  let segments: TranscriptSegment[] = (v.segments ?? []).map((s) => {
    const text = s.text.trim();
    return {
      start: clamp(s.start),
      end: clamp(Math.max(s.start, s.end)),
      text,
      words: (s.words ?? []).map((w) => ({
        word: w.word.trim(),
        start: clamp(w.start),
        end: clamp(Math.max(w.start, w.end)),
        probability: w.probability,
      })),
      tokens: s.tokens,
      temperature: s.temperature ?? input.temperature ?? 0,
      avg_logprob: s.avg_logprob ?? 0,
      compression_ratio: s.compression_ratio ?? round3(compressionRatio(text)),
      no_speech_prob: s.no_speech_prob ?? 0,
    };
  });
  if (segments.length === 0 && v.text.trim()) {
    const text = v.text.trim();
    segments = [
      {
        start: 0,
        end: round3(duration),
        text,
        words: [],
        tokens: [],
        temperature: input.temperature ?? 0,
        avg_logprob: 0,
        compression_ratio: round3(compressionRatio(text)),
        no_speech_prob: 0,
      },
    ];
  }
  // Top-level words (OpenAI's shape) go to the segment whose span holds their start.
  if (topWords.length && segments.every((s) => s.words.length === 0)) {
    for (const w of topWords) {
      const seg = segments.find((s) => w.start >= s.start && w.start < s.end) ?? segments.at(-1);
      seg?.words.push(w);
    }
  }
  return {
    language: toIso6391(v.language) ?? input.language ?? 'und',
    duration,
    segments: segments.filter((s) => s.text || s.words.length),
  };
}

export class UpstreamTranscriptionEngine implements TranscriptionEngine {
  readonly type = 'openai';
  readonly languages: readonly string[] | null;
  readonly jobTimeoutMs: number | undefined;

  constructor(
    private readonly s: UpstreamTranscriptionSettings,
    private readonly model: CatalogEntry,
  ) {
    this.languages = s.languages ?? null;
    this.jobTimeoutMs = s.job_timeout_ms;
    this.pool = audioPool(s, model);
  }

  /** The model's endpoints (libs/engine-pool): a failing one is retried on another before answering. */
  private readonly pool: EnginePool;

  close(): Promise<void> {
    return this.pool.close();
  }

  async transcribe(input: TranscribeInput, signal: AbortSignal): Promise<Transcript> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(input.wav)], { type: 'audio/wav' }), 'audio.wav');
    form.append('model', this.s.model ?? this.model.id);
    form.append('response_format', 'verbose_json');
    form.append('timestamp_granularities[]', 'segment');
    form.append('timestamp_granularities[]', 'word');
    if (input.language) form.append('language', input.language);
    if (input.temperature !== undefined) form.append('temperature', String(input.temperature));
    if (input.prompt) form.append('prompt', input.prompt);
    const headers = authorization(this.s.api_key_env, this.model);
    const body = await this.pool.call({ signal }, async (ep) => {
      const sig = AbortSignal.any([signal, AbortSignal.timeout(this.s.timeout_ms)]);
      let text: string;
      try {
        const res = await fetch(upstreamUrl(ep.url, 'audio/transcriptions'), {
          method: 'POST',
          headers,
          body: form,
          signal: sig,
        });
        if (!res.ok)
          throw await poolStatusFailure(res, 'transcription', ['language', 'prompt', 'temperature', 'file']);
        text = await res.text();
      } catch (e) {
        if (e instanceof ApiError || e instanceof EndpointFailure) throw e;
        throw poolFetchFailure(e, signal, 'transcription', this.s.timeout_ms);
      }
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw ApiError.internal('The transcription upstream answered something that is not JSON.');
      }
    });
    return normalizeUpstream(body, input);
  }
}

export const upstreamTranscriptionFactory: EngineFactory<TranscriptionEngine> = {
  type: 'openai',
  create(settings, { model }) {
    const s = parseEngineSettings(UpstreamTranscriptionSettingsSchema, settings, model);
    return new UpstreamTranscriptionEngine(s, model);
  },
};
