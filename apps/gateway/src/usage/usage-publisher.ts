import { type UsageEvent, UsageStream } from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import {
  createInbox,
  headers,
  type Msg,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';

export interface UsagePublisherOptions {
  /** Most events published and not yet acknowledged by JetStream at once. */
  window?: number;
  /** An event without an ack after this long is published again (same message id: stored once). */
  ackTimeoutMs?: number;
}

/** An event published and waiting for its ack; `ev` is emptied once it leaves `inflight` (see there). */
interface Pending {
  ev: UsageEvent | null;
  sentAt: number;
}

const dec = new TextDecoder();

/**
 * Publishes usage events to JetStream off the request path, PIPELINED (ADR 0014): up to `window`
 * events are in flight at once, each a plain NATS publish to the stream's subject with the request id
 * as its `Nats-Msg-Id` (JetStream stores a message id once within the stream's duplicate window) and a
 * reply subject on one multiplexed inbox, where JetStream's PubAck arrives. An event leaves the
 * publisher only when its ack says it is stored (or was a duplicate of a stored one). A negative ack, no
 * responders (no stream), or no ack within `ackTimeoutMs` puts the event back in the backlog and pauses
 * publishing with backoff (100 ms doubling to 10 s); the retry carries the same message id, so nothing
 * is lost and nothing doubled. close() waits (bounded) for the backlog and the window to empty.
 *
 * Why not `jetstream(nc).publish()`: it awaits one ack per call over `nc.request()`, which builds Error
 * objects (an async-trace context, a TimeoutError, a RequestError("cancelled")) for every publish,
 * successful or not; measured at ~7 % of the gateway's CPU per request (docs/performance.md).
 */
export class UsagePublisher {
  private readonly backlog: UsageEvent[] = [];
  /**
   * By the number at the end of the ack's reply subject. The entry leaves with its event emptied: a
   * long-lived Map that gains and loses an entry per request rebuilds its table every few dozen
   * entries, and V8 keeps each replaced table, with what it held, in the old generation until a full
   * collection; the events it points at would survive every scavenge until then (promoted; see RpcClient.calls).
   */
  private readonly inflight = new Map<number, Pending>();
  private readonly window: number;
  private readonly ackTimeoutMs: number;
  private sub: Subscription | null = null;
  private inbox = '';
  private seq = 0;
  private scheduled = false;
  private pausedUntil = 0;
  private delay = 100;
  private resumeTimer: NodeJS.Timeout | null = null;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  private drained: (() => void) | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
    /** Subject root of the events (UsageStream.root; tests use their own). */
    private readonly root: string = UsageStream.root,
    opts: UsagePublisherOptions = {},
  ) {
    this.window = opts.window ?? 256;
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 5_000;
    this.sweeper = setInterval(() => this.sweep(), Math.min(1_000, this.ackTimeoutMs));
    this.sweeper.unref();
  }

  /** Events not yet acknowledged: waiting, and published without an ack yet. */
  get pending(): number {
    return this.backlog.length + this.inflight.size;
  }

  /** Events published and not acknowledged yet (never more than the window). */
  get inFlight(): number {
    return this.inflight.size;
  }

  record(ev: UsageEvent): void {
    this.backlog.push(ev);
    this.schedule();
  }

  /** Publishes on the next turn of the event loop: the events of one turn leave in one socket write. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.closed && this.drained === null) return;
    const now = Date.now();
    if (now < this.pausedUntil) {
      this.resumeTimer ??= setTimeout(() => {
        this.resumeTimer = null;
        this.pump();
      }, this.pausedUntil - now).unref();
      return;
    }
    this.ensureInbox();
    while (this.backlog.length && this.inflight.size < this.window) {
      const ev = this.backlog.shift()!;
      this.seq = this.seq >= 0x3fffffff ? 1 : this.seq + 1;
      const token = this.seq;
      const h = headers();
      h.set('Nats-Msg-Id', ev.requestId);
      try {
        this.nc.publish(UsageStream.subject(ev.model, this.root), JSON.stringify(ev), {
          reply: `${this.inbox}.${token}`,
          headers: h,
        });
        this.inflight.set(token, { ev, sentAt: now });
      } catch (err) {
        // A closed or draining connection: keep the event, retry after the pause.
        this.backlog.unshift(ev);
        this.failed(err);
        return;
      }
    }
  }

  private ensureInbox(): void {
    if (this.sub) return;
    this.inbox = createInbox();
    const cut = this.inbox.length + 1;
    this.sub = this.nc.subscribe(`${this.inbox}.*`, {
      callback: (_err, msg) => this.onAck(Number(msg.subject.slice(cut)), msg),
    });
  }

  private onAck(token: number, msg: Msg): void {
    const p = this.inflight.get(token);
    if (!p) return; // an ack after its timeout: the event was sent again, that copy's ack counts
    this.inflight.delete(token);
    const ev = p.ev!;
    p.ev = null;
    let ok = false;
    let reason: unknown = 'no responders (is the usage stream missing?)';
    if (msg.data.length > 0) {
      try {
        const ack = JSON.parse(dec.decode(msg.data)) as { stream?: string; error?: { description?: string } };
        ok = !ack.error && typeof ack.stream === 'string';
        reason = ack.error?.description ?? 'unexpected ack';
      } catch {
        reason = 'an ack that is not JSON';
      }
    }
    if (ok) {
      this.delay = 100;
    } else {
      this.backlog.unshift(ev);
      this.failed(reason);
    }
    this.afterSettle();
  }

  private failed(err: unknown): void {
    this.log.warn({ err, pending: this.pending }, 'usage publish failed; retrying');
    this.pausedUntil = Date.now() + this.delay;
    this.delay = Math.min(this.delay * 2, 10_000);
    this.schedule();
  }

  private afterSettle(): void {
    if (this.backlog.length) this.schedule();
    else if (this.inflight.size === 0) this.drained?.();
  }

  /** Events whose ack is overdue go back to the backlog (the retry is stored once: same message id). */
  private sweep(): void {
    const limit = Date.now() - this.ackTimeoutMs;
    let late = 0;
    for (const [token, p] of this.inflight) {
      if (p.sentAt > limit) continue;
      this.inflight.delete(token);
      this.backlog.unshift(p.ev!);
      p.ev = null;
      late++;
    }
    if (late) this.failed(`${late} usage event(s) without a JetStream ack in ${this.ackTimeoutMs} ms`);
  }

  /** Waits for every event to be acknowledged, at most `timeoutMs`; what is left is logged in full. */
  async close(timeoutMs = 5_000): Promise<void> {
    if (this.pending > 0) {
      const done = new Promise<void>((r) => {
        this.drained = r;
      });
      // Publish what waits now, without the backoff pause (a last try).
      this.pausedUntil = 0;
      this.pump();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
    }
    this.closed = true;
    this.drained = null;
    clearInterval(this.sweeper);
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    this.sub?.unsubscribe();
    this.sub = null;
    const left = [...this.backlog, ...[...this.inflight.values()].map((p) => p.ev!)];
    if (left.length) this.log.error({ events: left }, 'usage events not published at shutdown');
  }
}
