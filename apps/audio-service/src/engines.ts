import { ApiError, type CatalogEntry } from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import type { z } from 'zod';

/** The catalog's engine settings of one model: `{type, ...settings}`. */
export type EngineSettings = { type: string } & Record<string, unknown>;

/** Makes engines of one type from a catalog entry's `engine` settings. */
export interface EngineFactory<E> {
  readonly type: string;
  /** Validates `settings` (throwing a 500 that names the model: it is operator configuration), builds the engine. */
  create(settings: EngineSettings, ctx: { model: CatalogEntry; log: Logger }): E;
}

/**
 * Picks the engine of a model by `model.engine.type` and keeps one instance per model id and settings;
 * changed settings (a catalog reload) replace it. One registry per capability (speech, transcription).
 */
export class EngineRegistry<E extends { close?(): Promise<void> }> {
  private readonly factories = new Map<string, EngineFactory<E>>();
  private readonly engines = new Map<string, { key: string; engine: E }>();

  constructor(
    private readonly capability: string,
    private readonly log: Logger,
    factories: readonly EngineFactory<E>[],
  ) {
    for (const f of factories) this.factories.set(f.type, f);
  }

  get types(): string[] {
    return [...this.factories.keys()];
  }

  get(model: CatalogEntry): E {
    const settings = model.engine as EngineSettings;
    const key = stableJson(settings);
    const cached = this.engines.get(model.id);
    if (cached?.key === key) return cached.engine;
    const factory = this.factories.get(settings.type);
    if (!factory) {
      throw ApiError.internal(
        `Model '${model.id}' is configured with engine type '${settings.type}', which the audio service does not provide for ${this.capability} (it has: ${this.types.join(', ')}).`,
      );
    }
    const engine = factory.create(settings, {
      model,
      log: this.log.child({ model: model.id, engine: settings.type }),
    });
    this.engines.set(model.id, { key, engine });
    if (cached) void cached.engine.close?.().catch(() => undefined);
    return engine;
  }

  async close(): Promise<void> {
    const all = [...this.engines.values()];
    this.engines.clear();
    await Promise.all(all.map(({ engine }) => engine.close?.().catch(() => undefined)));
  }
}

/** Parses engine settings; a mistake is the operator's: a 500 that names the model and the field. */
export function parseSettings<S extends z.ZodType>(
  schema: S,
  settings: unknown,
  model: CatalogEntry,
): z.output<S> {
  const r = schema.safeParse(settings);
  if (r.success) return r.data;
  const i = r.error.issues[0];
  throw ApiError.internal(
    `Model '${model.id}' has invalid engine settings: ${i?.path.join('.') || 'engine'}: ${i?.message ?? 'invalid'}.`,
  );
}

/**
 * The Authorization header of an upstream call: the key is read, at call time, from the environment
 * variable the catalog names (never the key itself). A named variable that is unset is a 500.
 */
export function authorization(envName: string | undefined, model: CatalogEntry): Record<string, string> {
  if (!envName) return {};
  const v = process.env[envName];
  if (!v) {
    throw ApiError.internal(
      `Model '${model.id}' names the environment variable ${envName} for its upstream key, but it is not set.`,
    );
  }
  return { authorization: `Bearer ${v}` };
}

/**
 * Maps an upstream failure: a 4xx is the client's request (400, with the upstream's message and the
 * field it names, else the first of `params` the message mentions); anything else is a 500.
 */
export async function upstreamError(
  res: Response,
  what: string,
  params: readonly string[],
): Promise<ApiError> {
  let message = '';
  let param: string | null = null;
  try {
    const text = (await res.text()).slice(0, 4096);
    try {
      const j = JSON.parse(text) as {
        error?: { message?: unknown; param?: unknown } | string;
        detail?: unknown;
        message?: unknown;
      };
      const e = j.error;
      if (typeof e === 'string') message = e;
      else if (e && typeof e.message === 'string') {
        message = e.message;
        if (typeof e.param === 'string') param = e.param;
      } else if (typeof j.detail === 'string') message = j.detail;
      else if (typeof j.message === 'string') message = j.message;
    } catch {
      message = text;
    }
  } catch {
    // body unreadable: the status says enough
  }
  if (
    res.status >= 400 &&
    res.status < 500 &&
    res.status !== 401 &&
    res.status !== 403 &&
    res.status !== 429
  ) {
    const clean = message.replace(/\s+/g, ' ').trim().slice(0, 300);
    param ??= params.find((p) => new RegExp(`\\b${p}\\b`, 'i').test(clean)) ?? null;
    return ApiError.invalid(
      clean
        ? `The ${what} upstream refused the request: ${clean}`
        : `The ${what} upstream refused the request.`,
      param,
    );
  }
  return ApiError.internal(`The ${what} upstream failed (HTTP ${res.status}).`);
}

/** Joins an OpenAI-style base URL (ending in /v1 or not) and a path. */
export function upstreamUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** Rejects with a clean 500 (or the abort reason) when fetch fails below HTTP. */
export function fetchFailure(e: unknown, signal: AbortSignal, what: string, timeoutMs: number): unknown {
  if (signal.aborted) return signal.reason;
  const name = (e as { name?: string })?.name;
  if (name === 'TimeoutError')
    return ApiError.internal(`The ${what} upstream did not answer within ${timeoutMs} ms.`);
  return ApiError.internal(`The ${what} upstream could not be reached.`);
}

/** JSON with object keys sorted at every level, so that equal settings give equal cache keys. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}
