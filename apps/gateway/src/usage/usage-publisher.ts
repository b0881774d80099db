import { type UsageEvent, UsageStream } from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import { type JetStreamClient, jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Publishes usage events off the request path. Each event carries its request id as the JetStream
 * message id, so a retried publish is stored once. Failed publishes are retried with backoff until they
 * land; close() waits for the backlog (bounded) so a clean shutdown loses nothing.
 */
export class UsagePublisher {
  private readonly js: JetStreamClient;
  private readonly backlog: UsageEvent[] = [];
  private running = false;
  private idle: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    nc: NatsConnection,
    private readonly log: Logger,
    /** Subject root of the events (UsageStream.root; tests use their own). */
    private readonly root: string = UsageStream.root,
  ) {
    this.js = jetstream(nc, { timeout: 5_000 });
  }

  get pending(): number {
    return this.backlog.length;
  }

  record(ev: UsageEvent): void {
    this.backlog.push(ev);
    if (!this.running) this.idle = this.drain();
  }

  private async drain(): Promise<void> {
    this.running = true;
    let delay = 100;
    try {
      while (this.backlog.length) {
        const ev = this.backlog[0]!;
        try {
          await this.js.publish(UsageStream.subject(ev.model, this.root), JSON.stringify(ev), {
            msgID: ev.requestId,
          });
          this.backlog.shift();
          delay = 100;
        } catch (err) {
          this.log.warn({ err, pending: this.backlog.length }, 'usage publish failed; retrying');
          if (this.closed) return;
          await new Promise((r) => setTimeout(r, delay).unref());
          delay = Math.min(delay * 2, 10_000);
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** Waits for the backlog to drain, at most `timeoutMs`; what is left is logged in full. */
  async close(timeoutMs = 5_000): Promise<void> {
    await Promise.race([this.idle, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    this.closed = true;
    if (this.backlog.length)
      this.log.error({ events: this.backlog }, 'usage events not published at shutdown');
  }
}
