import type { UsageEvent } from '@infer/contracts';
import { Inject, Injectable } from '@nestjs/common';
import { UsagePublisher } from '../../usage/usage-publisher.js';
import type { CallObserver, CallOutcome } from '../outcome.js';

/**
 * The usage event of a call, which is also its request-log record (docs/adr/0110-request-log.md):
 * usage, status and latency, plus the log's fields (error code, the limit that refused it, first-token
 * time, trace id), each only when it has a value so a plain success stays as small as before.
 * A refusal (admitted = false) is marked `refused` and carries zero usage: the ledger writer keeps it
 * out of the usage ledger and writes it to the request log only.
 */
export function usageEventOf(c: CallOutcome): UsageEvent {
  const u = c.usage;
  const ev: UsageEvent = {
    requestId: c.requestId,
    memberId: c.memberId,
    keyId: c.keyId,
    model: c.model ?? '',
    endpoint: c.endpoint,
    promptTokens: u?.prompt_tokens ?? 0,
    completionTokens: u?.completion_tokens ?? 0,
    totalTokens: u?.total_tokens ?? 0,
    status: c.status,
    latencyMs: Math.round(c.latencyMs),
    at: c.at,
  };
  if (c.batch) ev.batch = true;
  if (c.cost > 0) ev.cost = c.cost;
  if (!c.admitted) ev.refused = true;
  if (c.errorCode) ev.errorCode = c.errorCode;
  if (c.limit) ev.limit = c.limit;
  if (c.firstTokenMs !== null) ev.firstTokenMs = Math.round(c.firstTokenMs);
  if (c.traceId) ev.traceId = c.traceId;
  if (c.bodies) ev.bodies = c.bodies;
  return ev;
}

/**
 * The request log's part of the governed call: refusals before dispatch (validation, unknown model,
 * a limit, a quota) have no usage event of their own, so this observer publishes one (`refused`, zero
 * usage) through the same usage publisher: batched with the other events, de-duplicated by request id
 * on the stream and in the log. Admitted calls need nothing more here: UsageObserver's event carries
 * the log fields (usageEventOf).
 */
@Injectable()
export class RequestLogObserver implements CallObserver {
  constructor(@Inject(UsagePublisher) private readonly usage: UsagePublisher) {}

  settled(c: CallOutcome): void {
    if (c.admitted) return;
    this.usage.record(usageEventOf(c));
  }
}
