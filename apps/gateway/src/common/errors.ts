import { ApiError, ErrorType } from '@infer/contracts';
import { isDatabaseUnavailable } from '@infer/persistence/lazy';
import { HttpException } from '@nestjs/common';

/**
 * The one place that turns any failure into the spec's Error body. ApiErrors pass as they are;
 * framework errors (bad JSON, body too large, unknown route) get a clean client error; anything else
 * is a 500 whose message says nothing about internals.
 */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof HttpException) return fromHttpException(e);
  const fe = e as { statusCode?: number; code?: string; message?: string };
  if (typeof fe?.code === 'string' && fe.code.startsWith('FST_') && fe.statusCode && fe.statusCode < 500) {
    return fromFastify(fe.statusCode, fe.code);
  }
  // The database is down or the connection was lost: a condition to retry, like every other backing
  // store's outage, not a fault.
  if (isDatabaseUnavailable(e)) return databaseUnavailable();
  return ApiError.internal();
}

function databaseUnavailable(): ApiError {
  return new ApiError(503, 'The database is unavailable right now; retry shortly.', {
    type: ErrorType.server,
    code: 'service_unavailable',
    headers: { 'retry-after': '5' },
  });
}

function fromHttpException(e: HttpException): ApiError {
  const status = e.getStatus();
  if (status === 404) {
    return new ApiError(404, 'Unknown request URL. See /openapi.json for the routes this API serves.', {
      type: ErrorType.invalidRequest,
      code: 'unknown_url',
    });
  }
  if (status === 405) return new ApiError(405, 'Method not allowed.', { type: ErrorType.invalidRequest });
  // Fastify's body-parser failures reach Nest as HttpExceptions that keep Fastify's message.
  if (status === 400) return ApiError.invalid(cleanMessage(e.message));
  if (status === 413) return fromFastify(413, 'FST_ERR_CTP_BODY_TOO_LARGE');
  if (status === 415) return fromFastify(415, 'FST_ERR_CTP_INVALID_MEDIA_TYPE');
  if (status < 500) return new ApiError(status, cleanMessage(e.message), { type: ErrorType.invalidRequest });
  return ApiError.internal();
}

function fromFastify(status: number, code: string): ApiError {
  switch (code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return ApiError.invalid('The request body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'The request body is too large.', {
        type: ErrorType.invalidRequest,
        code: 'request_too_large',
      });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        415,
        'Unsupported Content-Type: send application/json (or multipart/form-data where the API says so).',
        {
          type: ErrorType.invalidRequest,
          code: 'unsupported_media_type',
        },
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError(414, 'A path parameter of the URL is too long (at most 100 characters).', {
        type: ErrorType.invalidRequest,
        code: 'uri_too_long',
      });
    case 'FST_ERR_BAD_URL':
      return ApiError.invalid('The URL is malformed: a %-escape in its path is not valid.');
    default:
      return new ApiError(status, 'The request could not be read.', { type: ErrorType.invalidRequest });
  }
}

function cleanMessage(m: string): string {
  if (/not valid JSON|cannot be empty/i.test(m)) return 'The request body is not valid JSON.';
  return m;
}
