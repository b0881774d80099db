import { ApiError, EnginePoolFields } from '@infer/contracts';
import { EndpointFailure, EnginePool, networkOutcome, statusOutcome } from '@infer/engine-pool';
import { extensionOf } from '@infer/image-store';
import { parseEngineSettings } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { z } from 'zod';
import type { ImageEngine, ImageEngineInput, ImageEngineOutput } from './engine.js';
import type { ImageEngineFactory } from './registry.js';

/**
 * An upstream image server that speaks the OpenAI images API: POST {base_url}/images/generations
 * (JSON) and POST {base_url}/images/edits (multipart, `image` or `image[]`). LocalAI serves both
 * (stable diffusion / diffusers / flux backends); so do other OpenAI-compatible gateways.
 *
 * One upstream call per image (`n: 1`), so that variant i gets seed + i. The result is asked as
 * `b64_json`; an upstream that answers with a `url` is followed (http/https only, same time limit,
 * at most 64 MB). `seed` and `guidance` are sent only when the client set them, so upstreams that
 * refuse unknown fields keep working for plain requests.
 *
 * Settings (catalog `engine`):
 *   type: openai
 *   base_url: http://localai:8080/v1      # ends with the API version path
 *   model: stablediffusion                # name on the upstream; default the catalog id
 *   api_key_env: LOCALAI_API_KEY          # name of the env variable holding the key (optional)
 *   timeout_ms: 600000                    # per image
 *   guidance_field: guidance              # upstream field for the guidance scale (LocalAI: cfg_scale)
 *
 * Errors: an upstream 400 whose error code is `content_policy_violation` (or moderation_blocked)
 * is passed on as the same 400 (param prompt); any other upstream failure is a 500 ("upstream model
 * error", as the spec says), with the upstream's status in the logs only.
 */
export const OpenAIImagesSettingsSchema = z.looseObject({
  type: z.literal('openai'),
  /** base_url, or endpoints / discovery: the engine pool (libs/engine-pool). */
  ...EnginePoolFields,
  model: z.string().min(1).optional(),
  api_key_env: z.string().min(1).optional(),
  timeout_ms: z.number().int().min(1).default(600_000),
  guidance_field: z.string().min(1).default('guidance'),
});
export type OpenAIImagesSettings = z.infer<typeof OpenAIImagesSettingsSchema>;

const MAX_DOWNLOAD = 64 * 1024 * 1024;

export const openaiImagesEngineFactory: ImageEngineFactory = {
  type: 'openai',
  create(settings, { model, log }) {
    const s = parseEngineSettings(OpenAIImagesSettingsSchema, settings, model);
    let apiKey: string | undefined;
    if (s.api_key_env) {
      apiKey = process.env[s.api_key_env];
      if (!apiKey) {
        throw ApiError.internal(
          `Model '${model.id}': the environment variable ${s.api_key_env} (engine.api_key_env) is not set.`,
        );
      }
    }
    return new OpenAIImagesEngine(s, s.model ?? model.id, apiKey, log);
  },
};

export class OpenAIImagesEngine implements ImageEngine {
  readonly type = 'openai';
  /** The model's endpoints (libs/engine-pool): a failing one is retried on another before answering. */
  private readonly pool: EnginePool;

  constructor(
    private readonly s: OpenAIImagesSettings,
    private readonly upstreamModel: string,
    private readonly apiKey: string | undefined,
    private readonly log: Logger,
  ) {
    this.pool = new EnginePool(s, { model: upstreamModel, log });
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  async generate(input: ImageEngineInput, signal: AbortSignal): Promise<ImageEngineOutput> {
    const fields: Record<string, string | number> = {
      model: this.upstreamModel,
      prompt: input.prompt,
      n: 1,
      size: `${input.width}x${input.height}`,
      response_format: 'b64_json',
    };
    if (input.seedRequested) fields.seed = input.seed;
    if (input.guidance !== null) fields[this.s.guidance_field] = input.guidance;
    return this.pool.call({ signal }, (ep) => this.once(ep.url, input, fields, signal));
  }

  /** One generation on one endpoint; the endpoint's faults are EndpointFailures (tried elsewhere). */
  private async once(
    base: string,
    input: ImageEngineInput,
    fields: Record<string, string | number>,
    signal: AbortSignal,
  ): Promise<ImageEngineOutput> {
    const timeout = AbortSignal.timeout(this.s.timeout_ms);
    const both = AbortSignal.any([signal, timeout]);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    let res: Response;
    try {
      if (input.operation === 'edit') {
        const form = new FormData();
        for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
        const field = input.images.length > 1 ? 'image[]' : 'image';
        input.images.forEach((img, i) => {
          form.append(
            field,
            new Blob([img.bytes], { type: img.contentType }),
            `image-${i}.${extensionOf(img.contentType)}`,
          );
        });
        res = await fetch(`${base}/images/edits`, { method: 'POST', headers, body: form, signal: both });
      } else {
        res = await fetch(`${base}/images/generations`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(fields),
          signal: both,
        });
      }
    } catch (e) {
      const err = this.failure(e, signal, timeout, 'request failed');
      throw signal.aborted ? err : new EndpointFailure(networkOutcome(e, timeout.aborted), err);
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      if (res.ok) throw this.failure(e, signal, timeout, 'answer is not JSON');
      body = null;
    }
    if (!res.ok) {
      const err = this.upstreamError(res.status, body);
      const outcome = statusOutcome(res.status);
      throw outcome === 'client_error' ? err : new EndpointFailure(outcome, err);
    }
    const item = (body as { data?: Array<{ b64_json?: unknown; url?: unknown }> } | null)?.data?.[0];
    if (typeof item?.b64_json === 'string') return { bytes: Buffer.from(item.b64_json, 'base64') };
    if (typeof item?.url === 'string')
      return { bytes: await this.download(base, item.url, both, signal, timeout) };
    this.log.error({ status: res.status }, 'upstream images answer has no data[0].b64_json or url');
    throw ApiError.internal('The image model returned no image.');
  }

  private async download(
    base: string,
    url: string,
    both: AbortSignal,
    signal: AbortSignal,
    timeout: AbortSignal,
  ): Promise<Buffer> {
    let u: URL;
    try {
      u = new URL(url, `${base}/`);
    } catch {
      throw ApiError.internal('The image model returned an unusable image URL.');
    }
    if (!/^https?:$/.test(u.protocol))
      throw ApiError.internal('The image model returned an unusable image URL.');
    try {
      const res = await fetch(u, { signal: both });
      if (!res.ok || !res.body) {
        this.log.error({ status: res.status }, 'could not download the upstream image');
        throw ApiError.internal('The image model failed.');
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += chunk.length;
        if (size > MAX_DOWNLOAD)
          throw ApiError.internal('The image model returned an image that is too large.');
        chunks.push(Buffer.from(chunk));
      }
      return Buffer.concat(chunks);
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw this.failure(e, signal, timeout, 'download failed');
    }
  }

  private failure(e: unknown, signal: AbortSignal, timeout: AbortSignal, what: string): unknown {
    if (signal.aborted) return signal.reason;
    if (timeout.aborted) {
      this.log.error({ timeoutMs: this.s.timeout_ms }, `upstream images ${what}: timed out`);
      return ApiError.timeout('The image model did not answer in time.');
    }
    this.log.error({ err: (e as Error)?.message }, `upstream images ${what}`);
    return ApiError.internal('The image model failed.');
  }

  private upstreamError(status: number, body: unknown): ApiError {
    const err = (body as { error?: { code?: unknown; message?: unknown; type?: unknown } } | null)?.error;
    const code = typeof err?.code === 'string' ? err.code : null;
    if (status === 400 && (code === 'content_policy_violation' || code === 'moderation_blocked')) {
      return ApiError.contentPolicy(
        typeof err?.message === 'string' && err.message
          ? err.message
          : 'The prompt was rejected by the content policy.',
        'prompt',
      );
    }
    this.log.error({ status, code }, 'upstream images API refused the request');
    return ApiError.internal('The image model failed.');
  }
}
