import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, ErrorType } from '@infer/contracts';

/** Node's `maxHeaderSize` default: the request line and headers together, 16 KiB. */
export const MAX_HEADER_BYTES = 16 * 1024;

/**
 * Answers for requests that Node's HTTP parser refuses before Fastify sees them (Fastify's
 * `clientErrorHandler`): headers over MAX_HEADER_BYTES -> 431, a parser timeout -> 408, anything else
 * it cannot frame (a bad Content-Length, broken chunked encoding, a garbled request line) -> 400. The
 * body is the spec's error envelope, like every other answer, instead of Fastify's own JSON; the
 * connection is closed afterwards since the parser cannot tell where the next request would start.
 */
export function clientErrorAnswer(err: NodeJS.ErrnoException): ApiError | null {
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') return null;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return new ApiError(
      431,
      `The request headers are too large (at most ${MAX_HEADER_BYTES / 1024} KiB together). An API key is a short Bearer token.`,
      { type: ErrorType.invalidRequest, code: 'request_header_fields_too_large' },
    );
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new ApiError(408, 'The request was not received in time.', {
      type: ErrorType.invalidRequest,
      code: 'request_timeout',
    });
  }
  return ApiError.invalid('The HTTP request is malformed and could not be read.');
}

export function handleClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  const answer = socket.destroyed ? null : clientErrorAnswer(err);
  if (answer && socket.writable) {
    const body = JSON.stringify(answer.toBody());
    socket.write(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * True when a request carries more than one Host header. Node's parser keeps the first and drops the
 * others, so two front ends could route one request by different hosts (request smuggling, cache
 * poisoning); like the other framing errors it is refused (duplicateHostAnswer). A scan of the raw
 * header names: a few comparisons per request, no allocation.
 */
export function hasDuplicateHost(rawHeaders: readonly string[]): boolean {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length !== 4 || (name !== 'Host' && name !== 'host' && name.toLowerCase() !== 'host')) continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

export function duplicateHostAnswer(): ApiError {
  return ApiError.invalid('The HTTP request is malformed: it has more than one Host header.');
}
