import { Inject, Injectable } from '@nestjs/common';
import { UsagePublisher } from '../../usage/usage-publisher.js';
import type { CallObserver, CallOutcome } from '../outcome.js';
import { usageEventOf } from './request-log.observer.js';

/**
 * THE place usage is published from: one usage event per call that reached a service, whatever its
 * outcome (refusals before dispatch have none; RequestLogObserver publishes their log records). The
 * event carries the request log's fields too (usageEventOf). Interactive calls are fire-and-forget
 * (the publisher batches and retries until JetStream acks); batch lines return the ack's promise,
 * which the batch runner awaits before it writes the line's checkpoint.
 */
@Injectable()
export class UsageObserver implements CallObserver {
  constructor(@Inject(UsagePublisher) private readonly usage: UsagePublisher) {}

  settled(c: CallOutcome): void | Promise<void> {
    if (!c.admitted) return;
    const ev = usageEventOf(c);
    if (c.batch) return this.usage.recordAcked(ev);
    this.usage.record(ev);
  }
}
