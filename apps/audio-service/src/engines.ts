import { ApiError, type CatalogEntry, type EnginePoolSettings } from '@infer/contracts';
import { EndpointFailure, EnginePool, networkOutcome, statusOutcome } from '@infer/engine-pool';
import { type EngineFactory, EngineRegistry as EngineRegistryBase } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';

export type { EngineFactory } from '@infer/runtime';

/**
 * The engines of one capability (speech, transcription), one instance per model id and settings (see
 * EngineRegistry of @infer/runtime).
 */
export class EngineRegistry<E extends { close?(): Promise<void> }> extends EngineRegistryBase<E> {
  constructor(capability: string, log: Logger, factories: readonly EngineFactory<E>[]) {
    super(log, factories, {
      service: 'audio service',
      capability,
      // A GenAI span per engine call, with tracing on (see traceEngine of @infer/telemetry).
      spans: capability === 'speech' ? { synthesize: 'speech' } : { transcribe: 'transcription' },
    });
  }
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

/**
 * fetchFailure for a call through an engine pool: an EndpointFailure (timeout, connect) so the pool
 * tries another endpoint, or the abort reason.
 */
export function poolFetchFailure(e: unknown, signal: AbortSignal, what: string, timeoutMs: number): unknown {
  if (signal.aborted) return signal.reason;
  const timedOut = (e as { name?: string })?.name === 'TimeoutError';
  return new EndpointFailure(networkOutcome(e, timedOut), fetchFailure(e, signal, what, timeoutMs));
}

/** upstreamError for a call through an engine pool: 408/429/5xx are the endpoint's (EndpointFailure). */
export async function poolStatusFailure(
  res: Response,
  what: string,
  params: readonly string[],
): Promise<unknown> {
  const err = await upstreamError(res, what, params);
  const outcome = statusOutcome(res.status);
  return outcome === 'client_error' ? err : new EndpointFailure(outcome, err);
}

/** The engine pool of an upstream audio model (libs/engine-pool). */
export function audioPool(s: EnginePoolSettings, model: CatalogEntry): EnginePool {
  return new EnginePool(s, { model: model.id });
}

/** Rejects with a clean 500 (or the abort reason) when fetch fails below HTTP. */
export function fetchFailure(e: unknown, signal: AbortSignal, what: string, timeoutMs: number): unknown {
  if (signal.aborted) return signal.reason;
  const name = (e as { name?: string })?.name;
  if (name === 'TimeoutError')
    return ApiError.internal(`The ${what} upstream did not answer within ${timeoutMs} ms.`);
  return ApiError.internal(`The ${what} upstream could not be reached.`);
}
