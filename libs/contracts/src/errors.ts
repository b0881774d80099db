import { z } from 'zod';

/** The spec's Error body: `{error: {message, type, param, code}}`. */
export const ErrorBodySchema = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string().nullable(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** Machine-readable `code` values of the spec's error table. */
export const ErrorCode = {
  invalidRequest: 'invalid_request_error',
  contentPolicy: 'content_policy_violation',
  invalidApiKey: 'invalid_api_key',
  monthlyCap: 'monthly_cap_reached',
  tierRestricted: 'tier_restricted',
  modelNotFound: 'model_not_found',
  rateLimit: 'rate_limit_exceeded',
  insufficientQuota: 'insufficient_quota',
  quotaExceeded: 'quota_exceeded',
  searchUnavailable: 'search_unavailable',
  /** Every endpoint of the model is saturated (503 with Retry-After). */
  overloaded: 'overloaded',
  /** No endpoint of the model can be reached (503). */
  serviceUnavailable: 'service_unavailable',
} as const;

/** `type` values. Where the spec is silent these follow the OpenAI API (see docs/api-decisions.md). */
export const ErrorType = {
  invalidRequest: 'invalid_request_error',
  auth: 'auth_error',
  quota: 'insufficient_quota',
  permission: 'permission_error',
  rateLimit: 'rate_limit_error',
  server: 'server_error',
  timeout: 'timeout_error',
} as const;

export interface ApiErrorInit {
  type?: string | null;
  code?: string | null;
  param?: string | null;
  /** Extra response headers, e.g. Retry-After on a 429. */
  headers?: Record<string, string>;
}

/**
 * A failure that leaves the gateway as the spec's Error body. Services raise it too: it crosses NATS
 * as `toWire()` and is rebuilt by `ApiError.fromWire()`.
 *
 * Only a 500 (something went wrong that someone should look into) captures a stack trace. Every other
 * status is an answer, not a bug: a refusal (401, 429 ...), a client error (4xx), an unavailability
 * (503) or a deadline (524). Those are built without one, so that a burst of them (every request of a
 * client over its limit, every request while no replica answers) does not capture, keep and promote
 * call-site frames nobody reads: their `stack` is the "ApiError: message" line alone. Faults that are
 * not ApiErrors (TypeError ...) keep their own stacks and are logged with them (sendError).
 */
export class ApiError extends Error {
  readonly status: number;
  readonly type: string | null;
  readonly code: string | null;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, init: ApiErrorInit = {}) {
    const limit = Error.stackTraceLimit;
    if (status !== 500) Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.name = 'ApiError';
    this.status = status;
    this.type = init.type ?? null;
    this.code = init.code ?? null;
    this.param = init.param ?? null;
    this.headers = init.headers ?? {};
  }

  toBody(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }

  toWire(): WireError {
    const w: WireError = { status: this.status, ...this.toBody().error };
    // Headers a service sets (Retry-After of a 503 `overloaded`) travel with the error.
    for (const _ in this.headers) {
      w.headers = this.headers;
      break;
    }
    return w;
  }

  static fromWire(w: WireError): ApiError {
    const init: ApiErrorInit = { type: w.type, code: w.code, param: w.param };
    if (w.headers) init.headers = w.headers;
    return new ApiError(w.status, w.message, init);
  }

  /** Every endpoint of a model is saturated and the request waited its longest: retry after `seconds`. */
  static overloaded(seconds: number, message = 'The model is overloaded; retry later.'): ApiError {
    return new ApiError(503, message, {
      type: ErrorType.server,
      code: ErrorCode.overloaded,
      headers: { 'retry-after': String(Math.max(1, Math.ceil(seconds))) },
    });
  }

  static invalid(message: string, param: string | null = null): ApiError {
    return new ApiError(400, message, {
      type: ErrorType.invalidRequest,
      code: ErrorCode.invalidRequest,
      param,
    });
  }

  static contentPolicy(message: string, param: string | null = 'prompt'): ApiError {
    return new ApiError(400, message, {
      type: ErrorType.invalidRequest,
      code: ErrorCode.contentPolicy,
      param,
    });
  }

  static invalidKey(
    message = 'Invalid or missing API key. Pass it as "Authorization: Bearer <key>".',
  ): ApiError {
    return new ApiError(401, message, { type: ErrorType.invalidRequest, code: ErrorCode.invalidApiKey });
  }

  static noModelAccess(model: string): ApiError {
    return new ApiError(401, `Your API key does not have access to the requested model '${model}'.`, {
      type: ErrorType.auth,
      code: ErrorCode.invalidApiKey,
      param: 'model',
    });
  }

  static tierRestricted(message: string): ApiError {
    return new ApiError(403, message, { type: ErrorType.permission, code: ErrorCode.tierRestricted });
  }

  static modelNotFound(model: string, param = 'model'): ApiError {
    return new ApiError(404, `The model '${model}' does not exist.`, {
      type: ErrorType.invalidRequest,
      code: ErrorCode.modelNotFound,
      param,
    });
  }

  static internal(message = 'The server had an error while processing your request.'): ApiError {
    return new ApiError(500, message, { type: ErrorType.server });
  }

  static timeout(message = 'The request timed out.'): ApiError {
    return new ApiError(524, message, { type: ErrorType.timeout });
  }
}

/** An ApiError as it travels in a NATS frame. */
export const WireErrorSchema = z.object({
  status: z.number().int(),
  message: z.string(),
  type: z.string().nullable(),
  param: z.string().nullable(),
  code: z.string().nullable(),
  /** Response headers that belong to the error (Retry-After). */
  headers: z.record(z.string(), z.string()).optional(),
});
export type WireError = z.infer<typeof WireErrorSchema>;

/** Turns a validation issue path into the spec's `param`: `messages[0].content`. */
export function paramFromPath(path: ReadonlyArray<PropertyKey>): string | null {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out || null;
}
