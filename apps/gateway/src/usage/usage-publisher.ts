import { type UsageEvent, UsageStream } from '@infer/contracts';
import { NumberedTable } from '@infer/rpc';
import { type Logger } from '@infer/telemetry';
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
  /** A message without an ack after this long is published again (same message id: stored once). */
  ackTimeoutMs?: number;
  /**
   * Most events in one message (USAGE_BATCH_MAX). The events recorded in one turn of the event loop
   * for one model leave as one message: a JSON array with one message id for all of them. 1: every
   * event its own message (a JSON object with the request id as its message id), as before batching.
   */
  batchMax?: number;
}

/**
 * Events that leave as one message: one model's (one subject), with one message id. Kept as it is until
 * JetStream acknowledges it, so that a retry is the same message with the same id (stored once).
 */
interface Batch {
  readonly subject: string;
  readonly id: string;
  readonly events: UsageEvent[];
  readonly payload: string;
}

/** A batch published and waiting for its ack. */
interface Pending {
  readonly batch: Batch;
  readonly sentAt: number;
}

const dec = new TextDecoder();

/** Past this a lone event's logged bodies are replaced by a note (NATS's default max_payload is 1 MiB). */
const MAX_EVENT_BYTES = 900 * 1024;

/**
 * A lone event's message. Bodies that escape badly in JSON (control characters: 6 bytes each) could
 * pass NATS's max_payload even under the cap: they are then dropped, never the usage event.
 */
function lonePayload(ev: UsageEvent): string {
  const payload = JSON.stringify(ev);
  if (!ev.bodies || payload.length * 3 <= MAX_EVENT_BYTES || Buffer.byteLength(payload) <= MAX_EVENT_BYTES)
    return payload;
  const note = '[body not logged: too large for a usage message]';
  return JSON.stringify({ ...ev, bodies: { request: note, response: note } });
}

/**
 * Publishes usage events to JetStream off the request path, BATCHED and PIPELINED (ADR 0014). The
 * events recorded in one turn of the event loop leave together: for each model, up to `batchMax` of
 * them in one message (a JSON array; a lone event is a JSON object, as before batching) on the
 * stream's subject for that model, with one `Nats-Msg-Id` (the request id of a lone event; `batch:`
 * and the first event's request id and the count for several: an event is in one batch only, and a
 * batch is never re-formed), so JetStream stores a retried message once within its duplicate window,
 * and a reply subject on one multiplexed inbox, where JetStream's PubAck arrives. Up to `window`
 * events are in flight at once. A batch leaves the publisher only when its ack says it is stored (or
 * was a duplicate of a stored one). A negative ack, no responders (no stream), or no ack within
 * `ackTimeoutMs` puts the batch back, whole, before the backlog and pauses publishing with backoff
 * (100 ms doubling to 10 s); the retry is the same message with the same id, so nothing is lost and
 * nothing doubled. The ledger writer takes both shapes and de-duplicates by request id as well.
 * close() waits (bounded) for the backlog and the window to empty.
 *
 * Why batches: one JetStream message per request costs the gateway a publish and an ack to handle per
 * request, and NATS a stored message each; per turn and model it is one of each (bench/stages.ts shows
 * the usage stage's share).
 * Why not `jetstream(nc).publish()`: it awaits one ack per call over `nc.request()`, which builds Error
 * objects (an async-trace context, a TimeoutError, a RequestError("cancelled")) for every publish,
 * successful or not: the success path builds no Error objects (ADR 0014).
 */
export class UsagePublisher {
  private backlog: UsageEvent[] = [];
  /** Batches whose publish failed, sent again (first, as they were) once the pause is over. */
  private readonly retry: Batch[] = [];
  /** By the number at the end of the ack's reply subject (an InflightTable: see there why not a Map). */
  private readonly inflight = new NumberedTable<Pending>();
  /** Events in the batches of `inflight`. */
  private inflightEvents = 0;
  private readonly window: number;
  private readonly ackTimeoutMs: number;
  private readonly batchMax: number;
  private sub: Subscription | null = null;
  private inbox = '';
  private scheduled = false;
  private pausedUntil = 0;
  private delay = 100;
  private resumeTimer: NodeJS.Timeout | null = null;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  /** recordAcked() callers, by request id, resolved by their event's ack. */
  private readonly waiters = new Map<string, () => void>();
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
    this.batchMax = Math.max(1, Math.min(opts.batchMax ?? 64, this.window));
    this.sweeper = setInterval(() => this.sweep(), Math.min(1_000, this.ackTimeoutMs));
    this.sweeper.unref();
  }

  /** Events not yet acknowledged: waiting, and published without an ack yet. */
  get pending(): number {
    let retrying = 0;
    for (const b of this.retry) retrying += b.events.length;
    return this.backlog.length + retrying + this.inflightEvents;
  }

  /** Events published and not acknowledged yet (never more than the window). */
  get inFlight(): number {
    return this.inflightEvents;
  }

  record(ev: UsageEvent): void {
    this.backlog.push(ev);
    this.schedule();
  }

  /**
   * Records an event and resolves once JetStream has acknowledged it (stored, or a duplicate of a
   * stored one); rejects after `timeoutMs` without an ack. The event stays in the publisher either way
   * (it is published when JetStream is back): a caller that must not go on before the event is stored
   * (the batch runner's checkpoint) waits here, and on a rejection runs the work again under the same
   * request id, which the ledger keeps once.
   */
  recordAcked(ev: UsageEvent, timeoutMs = 30_000): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(ev.requestId);
        reject(new Error(`usage event ${ev.requestId} not acknowledged by JetStream within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      this.waiters.set(ev.requestId, () => {
        clearTimeout(timer);
        resolve();
      });
      this.record(ev);
    });
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
    for (;;) {
      const room = this.window - this.inflightEvents;
      if (room <= 0) break;
      // A batch sent again goes whole (its id stays its own), once the window has room for all of it.
      const again = this.retry[0];
      if (again && again.events.length > room) break;
      const batch = again ? (this.retry.shift() as Batch) : this.nextBatch(room);
      if (!batch) break;
      const token = this.inflight.nextKey();
      const h = headers();
      h.set('Nats-Msg-Id', batch.id);
      try {
        this.nc.publish(batch.subject, batch.payload, { reply: `${this.inbox}.${token}`, headers: h });
        this.inflight.set(token, { batch, sentAt: now });
        this.inflightEvents += batch.events.length;
      } catch (err) {
        // A closed or draining connection: keep the batch, retry after the pause.
        this.retry.unshift(batch);
        this.failed(err);
        return;
      }
    }
  }

  /**
   * The next message from the backlog: the first event's model, and up to `room` (and batchMax) more of
   * that model's events from the backlog, in order (a request id seen twice goes once); the others stay.
   */
  private nextBatch(room: number): Batch | null {
    const first = this.backlog[0];
    if (!first) return null;
    // An event with logged bodies (ADR 0110) leaves alone: up to twice REQUEST_LOG_BODY_MAX_BYTES.
    const max = first.bodies ? 1 : Math.min(room, this.batchMax);
    const events: UsageEvent[] = [first];
    let rest: UsageEvent[] | null = null;
    let i = 1;
    for (; i < this.backlog.length && events.length < max; i++) {
      const ev = this.backlog[i] as UsageEvent;
      if (ev.model !== first.model || ev.bodies) {
        rest ??= [];
        rest.push(ev);
      } else if (!events.some((e) => e.requestId === ev.requestId)) events.push(ev);
    }
    this.backlog = rest
      ? rest.concat(this.backlog.slice(i))
      : i === this.backlog.length
        ? []
        : this.backlog.slice(i);
    const subject = UsageStream.subject(first.model, this.root);
    return events.length === 1
      ? { subject, id: first.requestId, events, payload: lonePayload(first) }
      : { subject, id: `batch:${first.requestId}:${events.length}`, events, payload: JSON.stringify(events) };
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
    if (!p) return; // an ack after its timeout: the batch was sent again, that copy's ack counts
    this.inflight.delete(token);
    const batch = p.batch;
    this.inflightEvents -= batch.events.length;
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
      if (this.waiters.size) {
        for (const ev of batch.events) {
          const w = this.waiters.get(ev.requestId);
          if (w) {
            this.waiters.delete(ev.requestId);
            w();
          }
        }
      }
    } else {
      this.retry.unshift(batch);
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
    if (this.backlog.length || this.retry.length) this.schedule();
    else if (this.inflight.size === 0) this.drained?.();
  }

  /** Batches whose ack is overdue are sent again (stored once: same message id). */
  private sweep(): void {
    const limit = Date.now() - this.ackTimeoutMs;
    let late = 0;
    for (const [token, p] of this.inflight.entries()) {
      if (p.sentAt > limit) continue;
      this.inflight.delete(token);
      const batch = p.batch;
      this.inflightEvents -= batch.events.length;
      this.retry.unshift(batch);
      late += batch.events.length;
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
    const left = [
      ...this.retry.flatMap((b) => b.events),
      ...[...this.inflight.values()].flatMap((p) => p.batch.events),
      ...this.backlog,
    ];
    if (left.length) this.log.error({ events: left }, 'usage events not published at shutdown');
  }
}
