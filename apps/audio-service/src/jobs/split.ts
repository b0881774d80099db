import type { Logger } from '@infer/telemetry';
import type { AudioConfig } from '../config.js';
import { planSpeechChunks } from '../media/vad.js';
import { type Pcm16, planSegments, type Segment } from '../media/wav.js';

/**
 * The pieces of decoded audio (16 kHz mono) that go to the recogniser.
 *
 * `AUDIO_SPLIT=vad` (default): Silero VAD finds the speech; pieces are groups of speech regions that end
 * at pauses (never inside a word), at most AUDIO_SEGMENT_SECONDS long, and silence outside them (a
 * pause over 1.5 s, leading and trailing silence) is not sent. No speech at all: no piece.
 * `AUDIO_SPLIT=fixed`: the whole audio in pieces of AUDIO_SEGMENT_SECONDS cut at the quietest 100 ms.
 * A VAD that cannot run (its model missing) is logged as an error and the fixed plan is used, so that
 * transcription keeps working.
 */
export async function planPieces(
  pcm: Pcm16,
  config: Pick<AudioConfig, 'AUDIO_SPLIT' | 'AUDIO_SEGMENT_SECONDS' | 'AUDIO_VAD_MODEL'>,
  signal: AbortSignal,
  log: Logger,
): Promise<Segment[]> {
  if (config.AUDIO_SPLIT === 'fixed') return planSegments(pcm, config.AUDIO_SEGMENT_SECONDS);
  try {
    const { chunks } = await planSpeechChunks(pcm, config.AUDIO_SEGMENT_SECONDS, {
      signal,
      ...(config.AUDIO_VAD_MODEL ? { modelPath: config.AUDIO_VAD_MODEL } : {}),
    });
    return chunks;
  } catch (err) {
    if (signal.aborted) throw err;
    log.error({ err }, 'voice activity detection failed; cutting the audio at fixed lengths instead');
    return planSegments(pcm, config.AUDIO_SEGMENT_SECONDS);
  }
}
