import { z } from 'zod';
import { ModelIdSchema } from './common.js';
import { BlobRefSchema } from './envelope.js';
import { boundedText, TextLimits } from './text-limits.js';

// ---- speech: POST /v1/audio/speech ----
export const SPEECH_MAX_INPUT_CHARS = 4096;

export const SPEECH_FORMATS = ['mp3', 'wav', 'flac', 'aac', 'pcm', 'opus'] as const;
export const SpeechFormatSchema = z.enum(SPEECH_FORMATS);
export type SpeechFormat = z.infer<typeof SpeechFormatSchema>;

/** Content-Type of the raw audio body per `response_format`. */
export const AUDIO_CONTENT_TYPES: Readonly<Record<SpeechFormat, string>> = Object.freeze({
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  flac: 'audio/flac',
  aac: 'audio/aac',
  pcm: 'audio/pcm',
  opus: 'audio/ogg',
});

export const SpeechRequestSchema = z
  .object({
    model: ModelIdSchema,
    input: z
      .string()
      .min(1, 'must not be empty')
      .max(SPEECH_MAX_INPUT_CHARS, `must be at most ${SPEECH_MAX_INPUT_CHARS} characters`),
    voice: boundedText(TextLimits.voice).min(1, 'must not be empty'),
    response_format: SpeechFormatSchema.default('mp3'),
    speed: z.number().min(0.25, 'must be between 0.25 and 4').max(4, 'must be between 0.25 and 4').default(1),
  })
  .meta({ id: 'SpeechRequest' });
export type SpeechRequest = z.infer<typeof SpeechRequestSchema>;
export type SpeechRequestInput = z.input<typeof SpeechRequestSchema>;

// ---- transcription: POST /v1/audio/transcriptions (multipart/form-data) ----
/** Largest audio file accepted; the gateway checks the `file` part against it. */
export const TRANSCRIPTION_MAX_BYTES = 25 * 1024 * 1024;

export const TranscriptionFormatSchema = z.enum(['json', 'verbose_json', 'text', 'srt', 'vtt']);
export type TranscriptionFormat = z.infer<typeof TranscriptionFormatSchema>;

export const TimestampGranularitySchema = z.enum(['word', 'segment']);
export type TimestampGranularity = z.infer<typeof TimestampGranularitySchema>;

/**
 * The text fields of the form, as the gateway's multipart parser hands them over: every value a
 * string, a repeated field an array of strings. The `file` part is checked by the gateway (see
 * TRANSCRIPTION_MAX_BYTES). `timestamp_granularities[]` (the OpenAI SDKs' field name) must reach this
 * schema as `timestamp_granularities`; `normalizeFormFields` does that.
 */
export const TranscriptionRequestSchema = z
  .object({
    model: ModelIdSchema,
    /** ISO-639-1 code; auto-detected when omitted. */
    language: z
      .string()
      .regex(/^[A-Za-z]{2}$/, 'must be an ISO-639-1 code of two letters, e.g. en')
      .transform((s) => s.toLowerCase())
      .optional(),
    response_format: TranscriptionFormatSchema.default('json'),
    /** Used with `verbose_json` only. One form value arrives as a string, a repeated one as an array. */
    timestamp_granularities: z
      .union([TimestampGranularitySchema, z.array(TimestampGranularitySchema).min(1)], {
        error: (iss) =>
          iss.input === undefined ? undefined : "must be 'word', 'segment' or an array of them",
      })
      .transform((v) => (Array.isArray(v) ? [...new Set(v)] : [v]))
      .default(['segment'])
      .describe("With verbose_json only: 'word' and/or 'segment' (default segment)."),
    temperature: z.coerce
      .number()
      .min(0, 'must be between 0 and 1')
      .max(1, 'must be between 0 and 1')
      .optional(),
    prompt: boundedText(TextLimits.transcriptionPrompt).optional(),
  })
  .meta({ id: 'TranscriptionRequest' });
export type TranscriptionRequest = z.infer<typeof TranscriptionRequestSchema>;
export type TranscriptionRequestInput = z.input<typeof TranscriptionRequestSchema>;

// ---- transcription responses ----
export const TranscriptionSegmentSchema = z.object({
  id: z.number().int(),
  seek: z.number().int(),
  start: z.number(),
  end: z.number(),
  text: z.string(),
  tokens: z.array(z.number().int()),
  temperature: z.number(),
  avg_logprob: z.number(),
  compression_ratio: z.number(),
  no_speech_prob: z.number(),
});
export type TranscriptionSegment = z.infer<typeof TranscriptionSegmentSchema>;

export const TranscriptionWordSchema = z.object({
  word: z.string(),
  start: z.number(),
  end: z.number(),
  probability: z.number(),
});
export type TranscriptionWord = z.infer<typeof TranscriptionWordSchema>;

/**
 * `response_format: 'json'` (the default), and `text`/`srt`/`vtt`, whose content the service wraps in
 * `text`: the transcript with its language and task.
 */
export const TranscriptionJsonSchema = z
  .object({
    text: z.string(),
    /** ISO-639-1 code, detected or supplied. */
    language: z.string(),
    task: z.literal('transcribe'),
    words: z.array(TranscriptionWordSchema).nullable().optional(),
  })
  .meta({ id: 'TranscriptionJson' });
export type TranscriptionJson = z.infer<typeof TranscriptionJsonSchema>;

/** `response_format: 'verbose_json'`: adds duration, segments, and words (null unless asked for). */
export const TranscriptionSchema = z
  .object({
    text: z.string(),
    language: z.string(),
    task: z.literal('transcribe'),
    /** Seconds. */
    duration: z.number(),
    segments: z.array(TranscriptionSegmentSchema),
    /** Filled only when `timestamp_granularities` holds `word`; otherwise null. */
    words: z.array(TranscriptionWordSchema).nullable(),
  })
  .meta({ id: 'Transcription' });
export type Transcription = z.infer<typeof TranscriptionSchema>;

export const TranscriptionResponseSchema = z.union([TranscriptionSchema, TranscriptionJsonSchema]);
export type TranscriptionResponse = z.infer<typeof TranscriptionResponseSchema>;

// ---- gateway -> audio-service ----
/**
 * The `file` of a transcription as the audio-service receives it: the gateway parks the upload (up to
 * 25 MB, more than a NATS message holds) in Redis under `key` and sends this reference instead.
 */
export const TranscriptionUploadSchema = BlobRefSchema.extend({
  /** The file name the client gave, if any (a hint only: the content decides the format). */
  filename: z.string().optional(),
});
export type TranscriptionUpload = z.infer<typeof TranscriptionUploadSchema>;

/** Envelope body of `infer.audio.transcriptions`: the validated form fields plus the upload reference. */
export const TranscriptionServiceBodySchema = TranscriptionRequestSchema.extend({
  file: TranscriptionUploadSchema,
});
export type TranscriptionServiceBody = z.infer<typeof TranscriptionServiceBodySchema>;
