import { ApiError, EnginePoolFields, type EnginePoolSettings } from '@infer/contracts';
import { EndpointFailure, EnginePool, networkOutcome, statusOutcome } from '@infer/engine-pool';
import type { Logger } from '@infer/telemetry';
import { z } from 'zod';
import type { EngineContext } from '../settings.js';
import { EngineConfigError } from '../settings.js';

/** Settings every upstream engine shares (catalog `engine`). */
export const UpstreamCommon = {
  /**
   * Where the server(s) are: `base_url` (root of one server: TEI `http://tei:8080`, OpenAI-compatible
   * `http://vllm:8000/v1`), `endpoints` or `discovery`, and how requests spread over them (engine pool).
   */
  ...EnginePoolFields,
  /** Model name on the upstream; defaults to the catalog id. */
  model: z.string().min(1).optional(),
  /** Name of an environment variable that holds the upstream's key (never the key itself). */
  api_key_env: z.string().min(1).optional(),
  /** Longest wait for one upstream call. */
  timeout_ms: z.number().int().min(1).max(3_600_000).default(60_000),
};

export interface UpstreamTarget {
  /** The model's endpoints (libs/engine-pool): each call goes to one, failing ones are retried elsewhere. */
  pool: EnginePool;
  headers: Record<string, string>;
  timeoutMs: number;
  log: Logger;
}

/** Resolves the base URL and the key (read from the named environment variable, once). */
export function upstreamTarget(
  s: EnginePoolSettings & { api_key_env?: string | undefined; timeout_ms: number },
  ctx: EngineContext,
  env: NodeJS.ProcessEnv = process.env,
): UpstreamTarget {
  const sources = [s.base_url, s.endpoints, s.discovery].filter((x) => x !== undefined).length;
  if (sources !== 1)
    throw new EngineConfigError(ctx.model.id, 'give exactly one of base_url, endpoints or discovery');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (s.api_key_env) {
    const key = env[s.api_key_env];
    if (!key)
      throw new EngineConfigError(
        ctx.model.id,
        `environment variable ${s.api_key_env} (api_key_env) is not set`,
      );
    headers.authorization = `Bearer ${key}`;
  }
  const pool = new EnginePool(s, { model: ctx.model.id, log: ctx.log });
  return { pool, headers, timeoutMs: s.timeout_ms, log: ctx.log };
}

const MAX_ERROR_BODY = 64 * 1024;

/**
 * POSTs JSON to the upstream and returns the parsed JSON answer. Failures become the spec's errors:
 * - the client went away or the deadline passed (`signal`): the signal's reason, as it is;
 * - the upstream refused the input (400, 413, 422 and other 4xx about the request): 400 with the
 *   upstream's own message;
 * - the upstream is overloaded (408, 429, 503): 503 `service_unavailable`, retryable;
 * - anything else (other 5xx, 401/403/404 = our configuration, refused connection, timeout, a body that
 *   is not JSON): a clean 500 whose message has no internals; the details go to the log.
 */
export function postJson(
  t: UpstreamTarget,
  path: string,
  body: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  const json = JSON.stringify(body);
  return t.pool.call({ signal }, (ep) => postOnce(t, `${ep.url}${path}`, json, signal));
}

/** One POST to one endpoint; endpoint faults are EndpointFailures (the pool tries another endpoint). */
async function postOnce(t: UpstreamTarget, url: string, json: string, signal: AbortSignal): Promise<unknown> {
  const timeout = AbortSignal.timeout(t.timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: t.headers,
      body: json,
      signal: AbortSignal.any([signal, timeout]),
    });
  } catch (e) {
    if (signal.aborted) throw signal.reason;
    if (timeout.aborted) {
      t.log.error({ url, timeoutMs: t.timeoutMs }, 'upstream timed out');
      throw new EndpointFailure('timeout', upstreamFailed());
    }
    t.log.error({ url, err: causeOf(e) }, 'upstream unreachable');
    throw new EndpointFailure(networkOutcome(e, false), upstreamFailed());
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    if (signal.aborted) throw signal.reason;
    t.log.error({ url, status: res.status, err: causeOf(e) }, 'upstream answer cut off');
    throw new EndpointFailure('broken', upstreamFailed());
  }
  if (!res.ok) {
    const err = mapStatus(res.status, text.slice(0, MAX_ERROR_BODY), url, t.log);
    // 503 is TEI's "queue full": busy, like 408/429 (another endpoint, no cooldown).
    const outcome = res.status === 503 ? 'busy' : statusOutcome(res.status);
    throw outcome === 'client_error' ? err : new EndpointFailure(outcome, err);
  }
  try {
    return JSON.parse(text);
  } catch {
    t.log.error({ url, status: res.status, body: text.slice(0, 200) }, 'upstream answer is not JSON');
    throw upstreamFailed();
  }
}

function mapStatus(status: number, body: string, url: string, log: Logger): ApiError {
  const message = errorMessage(body);
  if (status === 408 || status === 429 || status === 503) {
    log.warn({ url, status, message }, 'upstream busy');
    return new ApiError(503, 'The model server is busy right now; retry later.', {
      type: 'server_error',
      code: 'service_unavailable',
    });
  }
  if (status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 404 && status !== 405) {
    log.info({ url, status, message }, 'upstream refused the input');
    return ApiError.invalid(message ?? `The model server refused the input (HTTP ${status}).`);
  }
  log.error({ url, status, message }, 'upstream failed');
  return upstreamFailed();
}

export function upstreamFailed(): ApiError {
  return ApiError.internal('The model server failed to answer; retry later.');
}

/** The human message in an upstream error body (OpenAI, vLLM, TEI, Infinity, Jina/FastAPI shapes). */
export function errorMessage(body: string): string | null {
  let j: unknown;
  try {
    j = JSON.parse(body);
  } catch {
    const t = body.trim();
    return t ? t.slice(0, 500) : null;
  }
  const o = (j ?? {}) as Record<string, unknown>;
  const err = o.error as Record<string, unknown> | string | undefined;
  const detail = o.detail;
  const candidates = [
    typeof err === 'object' && err ? err.message : undefined,
    typeof err === 'string' ? err : undefined,
    o.message,
    typeof detail === 'string' ? detail : undefined,
    Array.isArray(detail)
      ? detail
          .map((d) => (d as { msg?: unknown })?.msg)
          .filter(Boolean)
          .join('; ')
      : undefined,
  ];
  const m = candidates.find((c): c is string => typeof c === 'string' && c.length > 0);
  return m ? m.slice(0, 500) : null;
}

function causeOf(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string } };
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
}

/** A shape check of an upstream answer: a mismatch is the upstream's failure, a clean 500. */
export function expectShape<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  log: Logger,
): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  log.error(
    { what, issue: r.error.issues[0]?.message, path: r.error.issues[0]?.path },
    'unexpected upstream answer',
  );
  throw upstreamFailed();
}

/**
 * Splits `total` into integer parts proportional to `weights` (largest remainders), so that per-text
 * counts sum exactly to what the upstream reported for the whole call.
 */
export function apportion(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (weights.length === 0) return [];
  const w = sum > 0 ? weights : weights.map(() => 1);
  const wsum = sum > 0 ? sum : weights.length;
  const exact = w.map((x) => (total * x) / wsum);
  const out = exact.map(Math.floor);
  let left = total - out.reduce((a, b) => a + b, 0);
  const order = exact
    .map((x, i) => [x - Math.floor(x), i] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (left <= 0) break;
    out[i] = (out[i] as number) + 1;
    left--;
  }
  return out;
}
