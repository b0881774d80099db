import { Inject, Injectable } from '@nestjs/common';
import { UsagePublisher } from '../../usage/usage-publisher.js';
import type { CallObserver, CallOutcome } from '../outcome.js';

/**
 * THE place usage is published from: one usage event per call that reached a service, whatever its
 * outcome (refusals before dispatch have none). Interactive calls are fire-and-forget (the publisher
 * batches and retries until JetStream acks); batch lines return the ack's promise, which the batch
 * runner awaits before it writes the line's checkpoint.
 */
@Injectable()
export class UsageObserver implements CallObserver {
  constructor(@Inject(UsagePublisher) private readonly usage: UsagePublisher) {}

  settled(c: CallOutcome): void | Promise<void> {
    if (!c.admitted) return;
    const u = c.usage;
    const ev = {
      requestId: c.requestId,
      memberId: c.memberId,
      keyId: c.keyId,
      model: c.model as string,
      endpoint: c.endpoint,
      promptTokens: u?.prompt_tokens ?? 0,
      completionTokens: u?.completion_tokens ?? 0,
      totalTokens: u?.total_tokens ?? 0,
      status: c.status,
      latencyMs: Math.round(c.latencyMs),
      at: c.at,
      ...(c.batch ? { batch: true } : {}),
    };
    if (c.batch) return this.usage.recordAcked(ev);
    this.usage.record(ev);
  }
}
