import { ApiError, type CatalogEntry, OpenAIUpstreamEngineSchema } from '@infer/contracts';
import type { EnginePool } from '@infer/engine-pool';
import { parseEngineSettings } from '@infer/runtime';
import { z } from 'zod';
import {
  audioPool,
  authorization,
  type EngineFactory,
  fetchFailure,
  poolFetchFailure,
  poolStatusFailure,
  upstreamUrl,
} from '../engines.js';
import type { SpeechEngine, SpeechInput } from './engine.js';

/**
 * `openai`: any OpenAI-compatible speech server (Kokoro-FastAPI, speaches, LocalAI ...):
 * POST {base_url}/audio/speech with {model, input, voice, response_format, speed}; the body is the audio.
 *
 * `voices` (optional): the voices to offer. A list passes those names through; an object maps public
 * ids to the upstream's names (e.g. {es-female: ef_dora}). Without it every voice goes to the upstream,
 * which refuses the ones it lacks (a 400 naming `voice`).
 */
export const UpstreamSpeechSettingsSchema = OpenAIUpstreamEngineSchema.extend({
  voices: z
    .union([z.array(z.string().min(1)).min(1), z.record(z.string().min(1), z.string().min(1))])
    .optional(),
  /** Largest audio accepted from the upstream. */
  max_bytes: z
    .number()
    .int()
    .min(1)
    .default(64 * 1024 * 1024),
});
export type UpstreamSpeechSettings = z.infer<typeof UpstreamSpeechSettingsSchema>;

export class UpstreamSpeechEngine implements SpeechEngine {
  readonly type = 'openai';
  /** The model's endpoints (libs/engine-pool): a failing one is retried on another before answering. */
  private readonly pool: EnginePool;

  constructor(
    private readonly s: UpstreamSpeechSettings,
    private readonly model: CatalogEntry,
  ) {
    this.pool = audioPool(s, model);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** The upstream's name of a public voice id, or a 400 when `voices` is set and lacks it. */
  upstreamVoice(voice: string): string {
    const v = this.s.voices;
    if (!v) return voice;
    if (Array.isArray(v)) {
      if (v.includes(voice)) return voice;
    } else if (Object.hasOwn(v, voice)) {
      return v[voice] as string;
    }
    const ids = Array.isArray(v) ? v : Object.keys(v);
    throw ApiError.invalid(`Unknown voice '${voice}'. This model has: ${ids.join(', ')}.`, 'voice');
  }

  async checkVoice(voice: string): Promise<void> {
    this.upstreamVoice(voice);
  }

  async synthesize(req: SpeechInput, signal: AbortSignal): Promise<Buffer> {
    const body = {
      model: this.s.model ?? this.model.id,
      input: req.input,
      voice: this.upstreamVoice(req.voice),
      response_format: req.format,
      speed: req.speed,
    };
    const headers = { 'content-type': 'application/json', ...authorization(this.s.api_key_env, this.model) };
    const json = JSON.stringify(body);
    const res = await this.pool.call({ signal }, async (ep) => {
      const sig = AbortSignal.any([signal, AbortSignal.timeout(this.s.timeout_ms)]);
      let r: Response;
      try {
        r = await fetch(upstreamUrl(ep.url, 'audio/speech'), {
          method: 'POST',
          headers,
          body: json,
          signal: sig,
        });
      } catch (e) {
        throw poolFetchFailure(e, signal, 'speech', this.s.timeout_ms);
      }
      if (!r.ok) throw await poolStatusFailure(r, 'speech', ['voice', 'input', 'speed', 'response_format']);
      return r;
    });
    const declared = Number(res.headers.get('content-length') ?? '0');
    if (declared > this.s.max_bytes)
      throw ApiError.internal('The speech upstream answered more audio than allowed.');
    let buf: Buffer;
    try {
      buf = Buffer.from(await res.arrayBuffer());
    } catch (e) {
      throw fetchFailure(e, signal, 'speech', this.s.timeout_ms);
    }
    if (buf.length === 0) throw ApiError.internal('The speech upstream answered no audio.');
    if (buf.length > this.s.max_bytes)
      throw ApiError.internal('The speech upstream answered more audio than allowed.');
    const ct = res.headers.get('content-type') ?? '';
    if (/json|text\/html/i.test(ct)) throw ApiError.internal('The speech upstream answered no audio.');
    return buf;
  }
}

export const upstreamSpeechFactory: EngineFactory<SpeechEngine> = {
  type: 'openai',
  create(settings, { model }) {
    const s = parseEngineSettings(UpstreamSpeechSettingsSchema, settings, model);
    return new UpstreamSpeechEngine(s, model);
  },
};
