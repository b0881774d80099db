import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

export const newRequestId = (): string => `req_${randomBytes(12).toString('hex')}`;

const workIds = new WeakMap<FastifyRequest, string>();

/**
 * The id under which a request's work is dispatched, cancelled and billed. A client's own
 * `x-request-id` stays the id of the HTTP exchange (echoed, logged), but is never used for this: two
 * requests with the same client id must not cancel each other or collapse into one ledger row.
 */
export function workIdOf(req: FastifyRequest): string {
  if (req.headers['x-request-id'] !== req.id) return req.id;
  let id = workIds.get(req);
  if (!id) {
    id = newRequestId();
    workIds.set(req, id);
  }
  return id;
}
