import type { SpeechFormat } from '@infer/contracts';

/** One synthesis request as engines see it (validated by the gateway; `voice` is checked by the engine). */
export interface SpeechInput {
  input: string;
  voice: string;
  format: SpeechFormat;
  /** 0.25 to 4 (the contract's range), 1 = normal. */
  speed: number;
}

/**
 * The ONE speech engine interface: text in, a finished audio file of the requested format out.
 * Engines kill what they spawn (or abort their upstream call) when `signal` aborts.
 *
 * Implementations: `embedded-tts` (flite / espeak-ng encoded by ffmpeg, `embedded.ts`) and `openai`
 * (any OpenAI-compatible /v1/audio/speech server, `upstream.ts`).
 */
export interface SpeechEngine {
  readonly type: string;
  /** Throws the 400 (`param: voice`) for a voice the engine does not have, before any work. */
  checkVoice(voice: string): Promise<void>;
  synthesize(req: SpeechInput, signal: AbortSignal): Promise<Buffer>;
  close?(): Promise<void>;
}
