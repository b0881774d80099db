import { anthropicErrorBody, anthropicStatus } from '@infer/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from './errors.js';

const errorCodes = new WeakMap<object, string>();

/** The envelope `code` of the error a request was answered with (metrics), or undefined. */
export function errorCodeOf(req: FastifyRequest): string | undefined {
  return errorCodes.get(req.raw);
}

/**
 * Whether a request is answered in Anthropic's shape: the Messages front door (`/v1/messages` and
 * below, e.g. count_tokens; an unknown path there too), and the model list asked for by an Anthropic
 * client (`anthropic-version` on `/v1/models`).
 */
export function anthropicShaped(req: Pick<FastifyRequest, 'url' | 'headers'>): boolean {
  const u = req.url;
  if (u.startsWith('/v1/messages')) {
    const c = u.charCodeAt(12);
    return Number.isNaN(c) || c === 0x2f || c === 0x3f; // end, '/', '?'
  }
  return u.startsWith('/v1/models') && req.headers['anthropic-version'] !== undefined;
}

export function sendError(req: FastifyRequest, reply: FastifyReply, exception: unknown): void {
  const err = toApiError(exception);
  if (err.code) errorCodes.set(req.raw, err.code);
  // A 500 is a fault to look into: logged with its stack. A 503/504/524 is an expected condition (no
  // replica up, a restart, a deadline): the access line (status and code) and the metrics count it,
  // without a stack, so that a burst of them costs little.
  if (err.status === 500) req.log.error({ err: exception }, 'request failed');
  if (reply.sent || reply.raw.headersSent) {
    // Too late for a status: a stream already started. Close it; the stream relay reports errors itself.
    if (!reply.raw.writableEnded) reply.raw.end();
    return;
  }
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  if (anthropicShaped(req)) {
    // Anthropic's clients read `request-id`; the status keeps its meaning (503 is Anthropic's 529).
    void reply
      .header('request-id', req.id)
      .code(anthropicStatus(err.status))
      .type('application/json; charset=utf-8')
      .send(anthropicErrorBody(err.status, err.message, req.id));
    return;
  }
  void reply.code(err.status).type('application/json; charset=utf-8').send(err.toBody());
}
