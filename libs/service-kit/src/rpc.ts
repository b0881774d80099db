import {
  ApiError,
  type EndFrame,
  type ErrorFrame,
  FrameKind,
  type ServiceRequest,
  Subjects,
  type UsageReport,
  type WireError,
} from '@infer/contracts';
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from './logger.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One frame on the wire: a kind byte then UTF-8 JSON (see FrameKind in contracts). */
export function encodeFrame(kind: number, json: string): Uint8Array {
  const body = enc.encode(json);
  const out = new Uint8Array(body.length + 1);
  out[0] = kind;
  out.set(body, 1);
  return out;
}

/** What a handler gets besides the request: an abort signal (client gone, deadline) and a way to stream. */
export interface HandlerContext {
  signal: AbortSignal;
  /** Sends one data frame (a stream chunk). Only meaningful when `req.stream` is true. */
  emit(chunk: unknown): void;
  log: Logger;
}

/** A handler returns the end of the work: the result (unary) and the exact usage. */
export type RpcHandler<B = unknown> = (req: ServiceRequest<B>, ctx: HandlerContext) => Promise<EndFrame>;

/** The abort reason of work cut short because its service is shutting down. */
export const SHUTDOWN = new Error('service shutting down');

/** What the client of work cut short by a shutdown is told: retryable, and where it can go next. */
function shutdownError(): ApiError {
  return new ApiError(503, 'The model service restarted before the answer was finished; retry the request.', {
    type: 'server_error',
    code: 'service_unavailable',
  });
}

/**
 * The service side: subscribes each subject in the service's queue group (replicas share the load),
 * listens for cancels on a plain subscription, aborts work at its deadline, and turns any failure into
 * an error frame (ApiError as it is; anything else as a clean 500).
 */
export class RpcServer {
  private readonly inflight = new Map<string, AbortController>();
  private readonly subs: Subscription[] = [];
  private readonly requestSubs: Subscription[] = [];
  private idle: (() => void) | null = null;
  /** Requests answered per subject, by outcome (read by the ops server's /metrics at scrape time). */
  readonly stats = new Map<string, { ok: number; error: number }>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly queue: string,
    private readonly log: Logger,
  ) {
    this.subs.push(
      nc.subscribe(Subjects.cancel, {
        callback: (_err, msg) => {
          const id = dec.decode(msg.data);
          this.inflight.get(id)?.abort(new Error('cancelled by client'));
        },
      }),
    );
  }

  get inflightCount(): number {
    return this.inflight.size;
  }

  handle<B>(subject: string, handler: RpcHandler<B>): void {
    const counts = { ok: 0, error: 0 };
    this.stats.set(subject, counts);
    this.requestSubs.push(
      this.nc.subscribe(subject, {
        queue: this.queue,
        callback: (err, msg) => {
          if (err) {
            this.log.error({ err, subject }, 'subscription error');
            return;
          }
          void this.dispatch(msg, handler as RpcHandler, counts);
        },
      }),
    );
  }

  private async dispatch(
    msg: Msg,
    handler: RpcHandler,
    counts: { ok: number; error: number },
  ): Promise<void> {
    if (!msg.reply) return;
    const reply = msg.reply;
    let req: ServiceRequest;
    try {
      req = JSON.parse(dec.decode(msg.data)) as ServiceRequest;
    } catch {
      this.nc.publish(reply, encodeFrame(FrameKind.error, JSON.stringify(ApiError.internal().toWire())));
      return;
    }
    const ac = new AbortController();
    this.inflight.set(req.requestId, ac);
    const left = req.deadline - Date.now();
    const timer = setTimeout(() => ac.abort(ApiError.timeout()), Math.max(0, left));
    const log = this.log.child({ requestId: req.requestId, model: req.model.id });
    const ctx: HandlerContext = {
      signal: ac.signal,
      log,
      emit: (chunk) => {
        if (!ac.signal.aborted) this.nc.publish(reply, encodeFrame(FrameKind.data, JSON.stringify(chunk)));
      },
    };
    try {
      const end = await handler(req, ctx);
      if (ac.signal.reason === SHUTDOWN) {
        // Cut short by a shutdown: the client gets a retryable error, the gateway the usage so far.
        const frame: ErrorFrame = { ...shutdownError().toWire(), usage: end.usage };
        this.nc.publish(reply, encodeFrame(FrameKind.error, JSON.stringify(frame)));
      } else {
        this.nc.publish(reply, encodeFrame(FrameKind.end, JSON.stringify(end)));
      }
      counts.ok++;
    } catch (e) {
      counts.error++;
      const wire = toWireError(e, ac.signal);
      if (wire.status >= 500 && ac.signal.reason !== SHUTDOWN) log.error({ err: e }, 'handler failed');
      this.nc.publish(reply, encodeFrame(FrameKind.error, JSON.stringify(wire)));
    } finally {
      clearTimeout(timer);
      this.inflight.delete(req.requestId);
      if (this.inflight.size === 0) this.idle?.();
    }
  }

  /**
   * Graceful stop: leaves the queue group at once (new requests go to the other replicas, or get a
   * 503 when there is none), lets the work in flight finish for up to `graceMs`, then aborts what is
   * left: streams end with a retryable 503 error frame that carries the usage so far, unary work with
   * a retryable 503. Resolves when nothing is in flight any more.
   */
  async drain(graceMs: number): Promise<void> {
    for (const s of this.requestSubs) s.unsubscribe();
    this.requestSubs.length = 0;
    await this.nc.flush().catch(() => undefined);
    if (this.inflight.size > 0) {
      const settled = new Promise<void>((r) => {
        this.idle = r;
      });
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<void>((r) => {
        timer = setTimeout(r, graceMs);
      });
      await Promise.race([settled, graceOver]);
      clearTimeout(timer);
      if (this.inflight.size > 0) {
        for (const ac of this.inflight.values()) ac.abort(SHUTDOWN);
        await settled;
      }
    }
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
  }

  /** Stops at once: aborts the work in flight (as a shutdown) and leaves every subscription. */
  async close(): Promise<void> {
    await this.drain(0);
  }
}

function toWireError(e: unknown, signal: AbortSignal): WireError {
  if (e instanceof ApiError) return e.toWire();
  if (signal.aborted && signal.reason instanceof ApiError) return signal.reason.toWire();
  if (signal.reason === SHUTDOWN) return shutdownError().toWire();
  return ApiError.internal().toWire();
}

/** A stream as the gateway sees it: raw chunk payloads to relay, then the end (usage) or an ApiError. */
export interface RpcStream extends AsyncIterable<Uint8Array> {
  /**
   * Settles once with the end frame (usage), or rejects with the ApiError that ended the stream. After
   * cancel() it still settles with the usage the service reports for the work it did, or rejects
   * after the grace period if the service says nothing.
   */
  readonly end: Promise<EndFrame>;
  /** Tells the service to abort the work; iteration stops at once. */
  cancel(): void;
  /**
   * The usage an error frame carried (work cut short by a service shutdown after using tokens), once
   * `end` has rejected; null otherwise.
   */
  readonly partialUsage: UsageReport | null;
}

export interface CallOptions {
  /** Give up when no frame arrives for this long (ms). */
  idleTimeoutMs: number;
  /** After cancel(), how long to wait for the service's final usage (ms). */
  cancelGraceMs?: number;
}

/**
 * The gateway side. Unary calls use NATS request/reply; streams use a private inbox that receives
 * data frames in order, ended by an end or error frame. No responders (no service up) and silence
 * become clean ApiErrors; the service is told to stop when the caller cancels, and its final usage is
 * still collected.
 */
export class RpcClient {
  constructor(private readonly nc: NatsConnection) {}

  async call<B>(subject: string, req: ServiceRequest<B>, opts: CallOptions): Promise<EndFrame> {
    let msg: Msg;
    try {
      msg = await this.nc.request(subject, JSON.stringify(req), { timeout: opts.idleTimeoutMs });
    } catch (e) {
      throw mapNatsError(e, subject);
    }
    return readEnd(msg.data);
  }

  stream<B>(subject: string, req: ServiceRequest<B>, opts: CallOptions): RpcStream {
    return new InboxStream(this.nc, subject, req, opts);
  }

  /** Tells whichever replica holds the request to abort it (a unary caller that went away). */
  cancel(requestId: string): void {
    this.nc.publish(Subjects.cancel, requestId);
  }
}

class InboxStream implements RpcStream {
  readonly end: Promise<EndFrame>;
  private resolveEnd!: (e: EndFrame) => void;
  private rejectEnd!: (e: unknown) => void;
  private readonly sub: Subscription;
  private readonly queue: Uint8Array[] = [];
  private wake: (() => void) | null = null;
  private done = false; // no more data will be yielded
  private settled = false; // end promise settled
  private failure: unknown = null;
  private timer: NodeJS.Timeout | undefined;
  partialUsage: UsageReport | null = null;

  constructor(
    private readonly nc: NatsConnection,
    subject: string,
    private readonly req: ServiceRequest<unknown>,
    private readonly opts: CallOptions,
  ) {
    this.end = new Promise<EndFrame>((res, rej) => {
      this.resolveEnd = res;
      this.rejectEnd = rej;
    });
    this.end.catch(() => undefined);
    const inbox = createInbox();
    this.sub = nc.subscribe(inbox, { callback: (_err, msg) => this.onMsg(msg, subject) });
    this.armIdle();
    try {
      nc.publish(subject, JSON.stringify(req), { reply: inbox });
    } catch (e) {
      // e.g. a request larger than the server's max_payload: fail cleanly, leak nothing.
      this.fail(mapNatsError(e, subject), false);
    }
  }

  private armIdle(
    ms = this.opts.idleTimeoutMs,
    err: unknown = ApiError.internal('The model service did not answer in time.'),
  ) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fail(err, true), ms);
  }

  private onMsg(m: Msg, subject: string): void {
    if (this.settled) return;
    if (m.data.length === 0) {
      // A status message: 503 means nobody subscribes to the subject.
      if (m.headers?.code === 503) this.fail(noService(subject), false);
      return;
    }
    const kind = m.data[0];
    if (kind === FrameKind.data) {
      if (this.done) return;
      this.armIdle();
      this.queue.push(m.data.subarray(1));
      this.notify();
      return;
    }
    try {
      const endFrame = readEnd(m.data, this);
      this.finish();
      this.resolveEnd(endFrame);
    } catch (e) {
      this.fail(e, false);
    }
  }

  private fail(e: unknown, tellService: boolean): void {
    if (this.settled) return;
    if (tellService) this.nc.publish(Subjects.cancel, this.req.requestId);
    this.failure = e;
    this.finish();
    this.rejectEnd(e);
  }

  private finish(): void {
    this.settled = true;
    this.done = true;
    clearTimeout(this.timer);
    this.sub.unsubscribe();
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.queue.length = 0;
    this.nc.publish(Subjects.cancel, this.req.requestId);
    this.armIdle(this.opts.cancelGraceMs ?? 5_000, new ApiError(499, 'Client closed the request.'));
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    while (true) {
      const next = this.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.failure && !this.queue.length) throw this.failure;
      if (this.done) return;
      await new Promise<void>((r) => {
        this.wake = r;
      });
    }
  }
}

function readEnd(data: Uint8Array, into?: { partialUsage: UsageReport | null }): EndFrame {
  const kind = data[0];
  const body = JSON.parse(dec.decode(data.subarray(1)));
  if (kind === FrameKind.end) return body as EndFrame;
  if (kind === FrameKind.error) {
    const frame = body as ErrorFrame;
    if (into && frame.usage) into.partialUsage = frame.usage;
    throw ApiError.fromWire(frame);
  }
  throw ApiError.internal();
}

function noService(_subject: string): ApiError {
  return new ApiError(503, 'The model service is not available right now; retry later.', {
    type: 'server_error',
    code: 'service_unavailable',
  });
}

function mapNatsError(e: unknown, subject: string): ApiError {
  const err = e as { name?: string; isNoResponders?: () => boolean; message?: string };
  if (err?.name === 'NoRespondersError' || err?.isNoResponders?.()) return noService(subject);
  if (err?.name === 'TimeoutError' || /timeout/i.test(err?.message ?? '')) {
    return ApiError.internal('The model service did not answer in time.');
  }
  return ApiError.internal();
}

export type { UsageReport };
