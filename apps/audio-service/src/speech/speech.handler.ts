import {
  ApiError,
  AUDIO_CONTENT_TYPES,
  type EndFrame,
  parseOrThrow,
  type SpeechRequest,
  SpeechRequestSchema,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import type { BlobStore } from '../blobs.js';
import type { EngineRegistry } from '../engines.js';
import type { AudioMetrics } from '../metrics/metrics.js';
import type { Slots } from '../slots.js';
import type { SpeechEngine } from './engine.js';

/** How long a speech result parked in Redis waits for the gateway. */
const BLOB_TTL_MS = 120_000;

export interface SpeechDeps {
  engines: EngineRegistry<SpeechEngine>;
  blobs: BlobStore;
  slots: Slots;
  metrics: AudioMetrics;
  /** Largest NATS message the connection may send (server's max_payload). */
  maxPayload: () => number;
}

/**
 * `infer.audio.speech`: checks the voice (400 `voice`), waits for a synthesis slot, runs the model's
 * engine, and answers the audio: inline as base64 when it fits in one NATS message, otherwise parked
 * in Redis (`binaryBlob`) for the gateway to read. Usage: `prompt_tokens` = characters of `input`.
 */
export function speechHandler(deps: SpeechDeps): RpcHandler<SpeechRequest> {
  return async (req, ctx): Promise<EndFrame> => {
    const body = parseOrThrow(SpeechRequestSchema, req.body);
    const engine = deps.engines.get(req.model);
    const started = performance.now();
    let outcome = 'error';
    try {
      await engine.checkVoice(body.voice);
      const release = await deps.slots.acquire(ctx.signal);
      let audio: Buffer;
      try {
        audio = await engine.synthesize(
          { input: body.input, voice: body.voice, format: body.response_format, speed: body.speed },
          ctx.signal,
        );
      } finally {
        release();
      }
      if (ctx.signal.aborted) throw ctx.signal.reason;
      const contentType = AUDIO_CONTENT_TYPES[body.response_format];
      const chars = [...body.input].length;
      const usage = { prompt_tokens: chars, completion_tokens: 0, total_tokens: chars };
      outcome = 'ok';
      // base64 is 4/3 of the bytes; leave room for the frame's JSON around it.
      if (Math.ceil(audio.length / 3) * 4 + 4096 <= deps.maxPayload()) {
        return { usage, binary: { base64: audio.toString('base64'), contentType } };
      }
      const ref = await deps.blobs.put(deps.blobs.key('speech'), audio, contentType, BLOB_TTL_MS);
      return { usage, binaryBlob: ref };
    } catch (e) {
      if (e instanceof ApiError && e.status < 500) outcome = 'rejected';
      throw e;
    } finally {
      deps.metrics.speechDuration.observe(
        { engine: engine.type, format: body.response_format, outcome },
        (performance.now() - started) / 1000,
      );
    }
  };
}
