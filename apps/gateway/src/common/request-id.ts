import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/**
 * `req_` + 24 hex digits: 64 random bits drawn once per 2^32 ids, then a counter. Unique across
 * replicas and restarts like 96 random bits per id were (two processes share a prefix with a chance of
 * 1 in 2^64), without a call into the CSPRNG per request. The ids are identifiers, not secrets: nothing
 * is authorised by knowing one (a client's cancel goes through its own connection).
 */
let prefix = '';
let counter = 0x1_0000_0000;
export function newRequestId(): string {
  if (counter > 0xffff_ffff) {
    prefix = `req_${randomBytes(8).toString('hex')}`;
    counter = 0;
  }
  return prefix + (counter++).toString(16).padStart(8, '0');
}

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
