import { ApiError } from '@infer/contracts';
import { isIso6391 } from './languages.js';

export interface TranscriptWord {
  word: string;
  /** Seconds from the start of the audio the engine was given. */
  start: number;
  end: number;
  probability: number;
}

export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
  /** The segment's words (empty when the engine gives no word timings). */
  words: TranscriptWord[];
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
}

/** What an engine returns for one piece of audio (one segment of at most 2 minutes). */
export interface Transcript {
  /** ISO-639-1 code, detected or supplied. */
  language: string;
  /** Seconds. */
  duration: number;
  segments: TranscriptSegment[];
}

export interface TranscribeInput {
  /** 16 kHz mono 16-bit WAV file on local disk. */
  wavPath: string;
  /** The same WAV as bytes (for engines that send it elsewhere). */
  wav: Buffer;
  duration: number;
  language?: string;
  prompt?: string;
  temperature?: number;
}

/**
 * The ONE transcription engine interface: a WAV of at most 2 minutes in, segments with word timings
 * out. Engines kill what they spawn (or abort their upstream call) when `signal` aborts.
 *
 * Implementations: `pocketsphinx` (Debian's CMU PocketSphinx, spawned, `pocketsphinx.ts`) and `openai`
 * (any OpenAI-compatible /v1/audio/transcriptions server, `upstream.ts`).
 */
export interface TranscriptionEngine {
  readonly type: string;
  /** ISO-639-1 codes the engine transcribes; null = any (the upstream decides). */
  readonly languages: readonly string[] | null;
  /** Longest a transcription job of this model may take (model setting `job_timeout_ms`), if set. */
  readonly jobTimeoutMs: number | undefined;
  transcribe(input: TranscribeInput, signal: AbortSignal): Promise<Transcript>;
  close?(): Promise<void>;
}

/** 400 `language` for a code that is not ISO-639-1 or that the model's engine cannot transcribe. */
export function checkLanguage(
  engine: TranscriptionEngine,
  modelId: string,
  language: string | undefined,
): void {
  if (language === undefined) return;
  if (!isIso6391(language)) {
    throw ApiError.invalid(
      `Invalid value for 'language': '${language}' is not an ISO-639-1 code (e.g. en, es, de).`,
      'language',
    );
  }
  if (engine.languages && !engine.languages.includes(language)) {
    throw ApiError.invalid(
      `The model '${modelId}' transcribes ${engine.languages.join(', ')} only (engine ${engine.type}); language '${language}' is not available. Omit 'language' or pass ${engine.languages.map((l) => `'${l}'`).join(' or ')}.`,
      'language',
    );
  }
}
