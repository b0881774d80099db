import type { FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from './errors.js';

const errorCodes = new WeakMap<object, string>();

/** The envelope `code` of the error a request was answered with (metrics), or undefined. */
export function errorCodeOf(req: FastifyRequest): string | undefined {
  return errorCodes.get(req.raw);
}

export function sendError(req: FastifyRequest, reply: FastifyReply, exception: unknown): void {
  const err = toApiError(exception);
  if (err.code) errorCodes.set(req.raw, err.code);
  if (err.status >= 500) req.log.error({ err: exception }, 'request failed');
  if (reply.sent || reply.raw.headersSent) {
    // Too late for a status: a stream already started. Close it; the stream relay reports errors itself.
    if (!reply.raw.writableEnded) reply.raw.end();
    return;
  }
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  void reply.code(err.status).type('application/json; charset=utf-8').send(err.toBody());
}
