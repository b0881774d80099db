import {
  ApiError,
  costOf,
  type EndFrame,
  type ErrorFrame,
  ErrorType,
  FrameKind,
  HEARTBEAT_MS,
  LIVENESS_MS,
  priceTable,
  type ServiceRequest,
  type StreamMeta,
  Subjects,
  type UsageReport,
  UsageStream,
  type WireError,
} from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { activeTracer, rpcPublishOptions, traceRpcHandler } from '@infer/telemetry';
import {
  createInbox,
  type Msg,
  type NatsConnection,
  headers as natsHeaders,
  type PublishOptions,
  type Subscription,
} from '@nats-io/transport-node';
import { withCaller } from './caller.js';
import { InflightTable, NumberedTable } from './inflight-table.js';

const enc = new TextEncoder();
/** A usage subject root: NATS tokens without wildcards. */
const USAGE_ROOT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
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
  /**
   * Set by a handler that can tell the usage of its work so far (a stream: the tokens sent). Read only
   * when a heartbeat goes out (about once a second), so that the gateway can bill what a client received
   * from a replica that then died.
   */
  progress?: () => UsageReport;
  /** Sends a meta frame (before the first data frame): a fallback model answers the stream. */
  meta?(m: StreamMeta): void;
}

interface Work {
  ac: AbortController;
  reply: string;
  ctx: HandlerContext;
}

/** A handler returns the end of the work: the result (unary) and the exact usage. */
export type RpcHandler<B = unknown> = (req: ServiceRequest<B>, ctx: HandlerContext) => Promise<EndFrame>;

/** The abort reason of work cut short because its service is shutting down. */
export const SHUTDOWN = new Error('service shutting down');

/** The abort reason of work whose client went away (a cancel message): expected, never logged as an error. */
export const CANCELLED_BY_CLIENT = new Error('cancelled by client');

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
  /** Work in flight by request id (an InflightTable: see there why not a plain Map). */
  private readonly inflight = new InflightTable<string, Work>();
  private readonly subs: Subscription[] = [];
  private readonly heartbeat: NodeJS.Timeout;
  private readonly requestSubs: Subscription[] = [];
  private idle: (() => void) | null = null;
  /** True once drain() began: the replica no longer takes new requests. */
  draining = false;
  /** Frames to publish at the end of this turn of the event loop: reply subject, frame, reply, frame ... */
  private outbox: Array<string | Uint8Array> = [];
  private flushScheduled = false;
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
          this.inflight.get(id)?.ac.abort(CANCELLED_BY_CLIENT);
        },
      }),
    );
    // One timer for all the work in flight: a heartbeat frame each, so the gateway knows we are alive.
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private beat(): void {
    for (const w of this.inflight.values()) {
      if (w.ac.signal.aborted) continue;
      let body = '{}';
      if (w.ctx.progress) {
        try {
          body = JSON.stringify({ usage: w.ctx.progress() });
        } catch {
          // a progress report that fails is left out; the heartbeat still goes
        }
      }
      this.send(w.reply, encodeFrame(FrameKind.heartbeat, body));
    }
  }

  /**
   * Queues a frame; the frames of one turn of the event loop are published together (flushFrames), in
   * order, so that the answers of the requests served in that turn leave in one socket write instead
   * of one each (the NATS client writes once per microtask checkpoint).
   *
   * An idle replica does not wait for the end of the turn: the first frame of a turn in which it
   * serves at most one request is published at once (a stream's first chunk no longer waits while the
   * engine parses the rest of what the upstream sent in the same read), and the rest of that turn is
   * batched as usual. Under load (more than one request in flight) nothing changes, so the writes per
   * request stay as they were (a rule that published every turn's first frame at once cost a second
   * write per turn: bench/results/data-path-issue-13.md, "Latency").
   */
  private send(reply: string, frame: Uint8Array): void {
    if (this.flushScheduled) {
      this.outbox.push(reply, frame);
      return;
    }
    this.flushScheduled = true;
    setImmediate(this.flushFrames);
    if (this.inflight.size <= 1) this.publishFrame(reply, frame);
    else this.outbox.push(reply, frame);
  }

  private publishFrame(reply: string, frame: Uint8Array): void {
    try {
      this.nc.publish(reply, frame);
    } catch (err) {
      this.log.debug({ err: String(err) }, 'frame not sent: the NATS connection is closed');
    }
  }

  /** Publishes the queued frames; a connection that is closed or draining drops them rather than throwing. */
  private readonly flushFrames = (): void => {
    this.flushScheduled = false;
    const out = this.outbox;
    if (!out.length) return;
    this.outbox = [];
    for (let i = 0; i < out.length; i += 2) this.publishFrame(out[i] as string, out[i + 1] as Uint8Array);
  };

  /**
   * Publishes the service's usage event of one request on the usage stream the gateway named
   * (`req.usageRoot`), so that its usage reaches the ledger even when the gateway that admitted it dies
   * before recording the request itself (core NATS: JetStream stores it, with the message id
   * `svc:<request id>` against a repeat). The gateway records the same request;
   * the ledger writer keeps one row per request id, the gateway's when both come (see UsageEventSchema
   * `source`). Best effort: a lost fallback event only matters if its gateway died too.
   */
  private recordUsage(
    req: ServiceRequest,
    usage: UsageReport | undefined,
    status: number,
    started: number,
  ): void {
    if (!req.usageRoot || !req.endpoint || !USAGE_ROOT.test(req.usageRoot)) return;
    const now = Date.now();
    const event = {
      requestId: req.requestId,
      memberId: req.memberId,
      keyId: req.keyId,
      model: req.model.id,
      endpoint: req.endpoint,
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? 0,
      totalTokens: usage?.total_tokens ?? 0,
      status,
      latencyMs: Math.max(0, now - started),
      at: now,
      source: 'service',
      // Priced as the gateway would (the envelope carries the model's catalog entry and its prices).
      cost: costOf(priceTable(req.model), {
        kind: req.model.kind,
        promptTokens: usage?.prompt_tokens ?? 0,
        completionTokens: usage?.completion_tokens ?? 0,
        images: imagesAsked(req.body),
        batch: false,
        failed: status >= 400,
      }),
    };
    try {
      const h = natsHeaders();
      h.set('Nats-Msg-Id', `svc:${req.requestId}`);
      this.nc.publish(UsageStream.subject(req.model.id, req.usageRoot), JSON.stringify(event), {
        headers: h,
      });
    } catch (err) {
      this.log.debug({ err: String(err) }, 'usage event not sent: the NATS connection is closed');
    }
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
      this.send(reply, encodeFrame(FrameKind.error, JSON.stringify(ApiError.internal().toWire())));
      return;
    }
    const ac = new AbortController();
    const left = req.deadline - Date.now();
    const timer = setTimeout(() => ac.abort(ApiError.timeout()), Math.max(0, left));
    const log = this.log.child({ requestId: req.requestId, model: req.model.id });
    const ctx: HandlerContext = {
      signal: ac.signal,
      log,
      emit: (chunk) => {
        if (!ac.signal.aborted) this.send(reply, encodeFrame(FrameKind.data, JSON.stringify(chunk)));
      },
      meta: (m) => {
        if (!ac.signal.aborted) this.send(reply, encodeFrame(FrameKind.meta, JSON.stringify(m)));
      },
    };
    this.inflight.set(req.requestId, { ac, reply, ctx });
    const started = Date.now();
    try {
      const caller = { cls: req.tier, member: req.memberId, deadline: req.deadline };
      const end = await withCaller(caller, () =>
        activeTracer
          ? traceRpcHandler(msg.subject, msg.headers, req, ctx, () => handler(req, ctx))
          : handler(req, ctx),
      );
      if (ac.signal.reason === SHUTDOWN) {
        // Cut short by a shutdown: the client gets a retryable error, the gateway the usage so far.
        const frame: ErrorFrame = { ...shutdownError().toWire(), usage: end.usage };
        this.send(reply, encodeFrame(FrameKind.error, JSON.stringify(frame)));
        this.recordUsage(req, end.usage, 503, started);
      } else {
        this.send(reply, encodeFrame(FrameKind.end, JSON.stringify(end)));
        this.recordUsage(req, end.usage, 200, started);
      }
      counts.ok++;
    } catch (e) {
      counts.error++;
      const wire = toWireError(e, ac.signal);
      // A client that went away is expected: whatever the handler threw on its abort is not a fault.
      if (ac.signal.reason === CANCELLED_BY_CLIENT) log.debug({ err: String(e) }, 'cancelled by the client');
      else if (wire.status >= 500 && ac.signal.reason !== SHUTDOWN) log.error({ err: e }, 'handler failed');
      let progress: UsageReport | undefined;
      try {
        progress = ctx.progress?.();
      } catch {
        // no usage to tell
      }
      // Work that used tokens before it failed (a tools loop whose search was refused): the error
      // frame carries that usage, so the gateway still meters it.
      const frame: ErrorFrame = progress ? { ...wire, usage: progress } : wire;
      this.send(reply, encodeFrame(FrameKind.error, JSON.stringify(frame)));
      this.recordUsage(req, progress, wire.status, started);
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
    this.draining = true;
    // A subscription's drain stops new deliveries but still dispatches what is already on its way,
    // so a request sent just before the replica left is answered, not dropped.
    const subs = this.requestSubs.splice(0);
    await Promise.all(subs.map((s) => s.drain().catch(() => s.unsubscribe())));
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
        for (const w of this.inflight.values()) w.ac.abort(SHUTDOWN);
        await settled;
      }
    }
    // The last frames (ends, shutdown errors) go out now, before the caller drains the connection.
    this.flushFrames();
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
    clearInterval(this.heartbeat);
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
  /** The stream's meta frame (a fallback model answers), once it arrived; null otherwise. */
  readonly meta: StreamMeta | null;
}

export interface CallOptions {
  /** Give up when no data or end frame arrives for this long (ms): bounds a stalled engine. */
  idleTimeoutMs: number;
  /** After cancel(), how long to wait for the service's final usage (ms). */
  cancelGraceMs?: number;
  /**
   * A replica that sends no frame at all, not even a heartbeat, for this long is presumed dead (ms):
   * the call fails with a retryable 503. Default LIVENESS_MS (4.5 s; services beat every second).
   */
  livenessMs?: number;
}

/** How often the client checks its calls for silence (ms): one timer for all of them. */
const SWEEP_MS = 250;

/**
 * The gateway side. Every call, unary or streamed, publishes the envelope with a reply subject on one
 * multiplexed inbox subscription (no SUB/UNSUB per call) and reads frames: data (streams), heartbeats,
 * then an end or error frame. No responders (no service up), a replica that stops beating (dead), and a
 * NATS connection that is down become clean 503s at once or within LIVENESS_MS; the service is told to
 * stop when the caller cancels, and its final usage is still collected.
 */
export class RpcClient {
  /** The calls waiting for frames, by the number at the end of their reply subject (see InflightTable). */
  private readonly calls = new NumberedTable<InboxCall>();
  private inboxPrefix = '';
  private sub: Subscription | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private connected = true;
  /** Calls opened in this turn of the event loop, published together by flushOutbox. */
  private outbox: Array<{ subject: string; data: Uint8Array; opts: PublishOptions; call: InboxCall }> = [];
  private flushScheduled = false;

  constructor(private readonly nc: NatsConnection) {
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === 'disconnect') this.connected = false;
        else if (st.type === 'reconnect') this.connected = true;
      }
    })().catch(() => undefined);
  }

  /** False while the NATS connection is down (calls then fail with a 503 at once). */
  get isConnected(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  /**
   * The call's own end promise, not an async function's wrapped around it (that cost a promise and two
   * microtask turns per call); a failure to open it still rejects rather than throws.
   */
  call<B>(subject: string, req: ServiceRequest<B>, opts: CallOptions): Promise<EndFrame> {
    try {
      return this.open(subject, req, opts, false).end;
    } catch (e) {
      return Promise.reject(e);
    }
  }

  stream<B>(subject: string, req: ServiceRequest<B>, opts: CallOptions): RpcStream {
    return this.open(subject, req, opts, true);
  }

  /** Tells whichever replica holds the request to abort it (a unary caller that went away). */
  cancel(requestId: string): void {
    // Not sent yet (same turn of the event loop): it never leaves.
    const i = this.outbox.findIndex((o) => o.call.requestId === requestId);
    if (i >= 0) {
      const [o] = this.outbox.splice(i, 1);
      o?.call.fail(new ApiError(499, 'Client closed the request.'), false);
      return;
    }
    tellCancel(this.nc, requestId);
  }

  private open(subject: string, req: ServiceRequest<unknown>, opts: CallOptions, stream: boolean): InboxCall {
    const token = this.calls.nextKey();
    const call = new InboxCall(this.nc, req, opts, stream, () => this.calls.delete(token));
    if (!this.isConnected) {
      call.fail(natsDown(), false);
      return call;
    }
    // Encoded once: the size check and the publish use the same bytes.
    const data = Buffer.from(envelopeJson(req));
    const max = this.nc.info?.max_payload ?? NATS_DEFAULT_MAX_PAYLOAD;
    if (data.length > max) {
      call.fail(envelopeTooLarge(data.length, max), false);
      return call;
    }
    this.ensureInbox();
    this.calls.set(token, call);
    this.outbox.push({
      subject,
      data,
      opts: rpcPublishOptions(subject, `${this.inboxPrefix}.${token}`, req, call.end),
      call,
    });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushOutbox);
    }
    return call;
  }

  /**
   * Publishes the calls opened during one turn of the event loop together: the NATS client writes to
   * its socket once per microtask checkpoint, so publishing each call as it opens costs one write per
   * request; here the requests that arrived together leave in one write. A call cancelled before its
   * turn came is never published.
   */
  private readonly flushOutbox = (): void => {
    this.flushScheduled = false;
    const batch = this.outbox;
    this.outbox = [];
    for (const o of batch) {
      if (o.call.isDone) {
        // cancelled (or failed) before it left: nothing to wait for
        o.call.fail(new ApiError(499, 'Client closed the request.'), false);
        continue;
      }
      try {
        this.nc.publish(o.subject, o.data, o.opts);
      } catch (e) {
        // e.g. the connection closed meanwhile: fail cleanly, leak nothing.
        o.call.fail(mapNatsError(e), false);
      }
    }
  };

  private ensureInbox(): void {
    if (this.sub) return;
    this.inboxPrefix = createInbox();
    const cut = this.inboxPrefix.length + 1;
    this.sub = this.nc.subscribe(`${this.inboxPrefix}.*`, {
      callback: (_err, msg) => this.calls.get(Number(msg.subject.slice(cut)))?.onMsg(msg),
    });
    this.sweeper = setInterval(() => {
      const now = performance.now();
      for (const c of this.calls.values()) c.check(now);
    }, SWEEP_MS);
    this.sweeper.unref();
  }

  /** Stops the inbox (tests, shutdown); calls still open fail. */
  close(): void {
    for (const c of [...this.calls.values()]) c.fail(ApiError.internal('The client closed.'), false);
    if (this.sweeper) clearInterval(this.sweeper);
    this.sub?.unsubscribe();
    this.sub = null;
  }
}

class InboxCall implements RpcStream {
  readonly end: Promise<EndFrame>;
  private resolveEnd!: (e: EndFrame) => void;
  private rejectEnd!: (e: unknown) => void;
  private readonly queue: Uint8Array[] = [];
  private wake: (() => void) | null = null;
  private done = false; // no more data will be yielded
  private settled = false; // end promise settled
  private failure: unknown = null;
  /** Last frame of any kind / last data or end frame (performance.now()). */
  private lastAny: number;
  private lastData: number;
  /** After cancel(): when to give up waiting for the final usage. */
  private graceUntil = Number.POSITIVE_INFINITY;
  partialUsage: UsageReport | null = null;
  meta: StreamMeta | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly req: ServiceRequest<unknown>,
    private readonly opts: CallOptions,
    private readonly streaming: boolean,
    private readonly release: () => void,
  ) {
    this.end = new Promise<EndFrame>((res, rej) => {
      this.resolveEnd = res;
      this.rejectEnd = rej;
    });
    this.end.catch(() => undefined);
    this.lastAny = this.lastData = performance.now();
  }

  /** Called by the client's sweep: silence past the limits ends the call. */
  check(now: number): void {
    if (this.settled) return;
    if (now > this.graceUntil) {
      this.fail(new ApiError(499, 'Client closed the request.'), false);
    } else if (now - this.lastAny > (this.opts.livenessMs ?? LIVENESS_MS)) {
      this.fail(replicaGone(), true);
    } else if (now - this.lastData > this.opts.idleTimeoutMs) {
      this.fail(ApiError.internal('The model service did not answer in time.'), true);
    }
  }

  onMsg(m: Msg): void {
    if (this.settled) return;
    const data = m.data;
    if (data.length === 0) {
      // A status message: 503 means nobody subscribes to the subject.
      if (m.headers?.code === 503) this.fail(noService(), false);
      return;
    }
    const now = performance.now();
    this.lastAny = now;
    const kind = data[0];
    if (kind === FrameKind.heartbeat) {
      if (data.length > 3) {
        try {
          const hb = JSON.parse(dec.decode(data.subarray(1))) as { usage?: UsageReport };
          if (hb.usage) this.partialUsage = hb.usage;
        } catch {
          // a malformed heartbeat still proves the replica alive
        }
      }
      return;
    }
    if (kind === FrameKind.meta) {
      try {
        this.meta = JSON.parse(dec.decode(data.subarray(1))) as StreamMeta;
      } catch {
        // a malformed meta frame changes no header
      }
      return;
    }
    this.lastData = now;
    if (kind === FrameKind.data) {
      if (this.done || !this.streaming) return;
      this.queue.push(data.subarray(1));
      this.notify();
      return;
    }
    try {
      const endFrame = readEnd(data, this);
      this.finish();
      this.resolveEnd(endFrame);
    } catch (e) {
      this.fail(e, false);
    }
  }

  get requestId(): string {
    return this.req.requestId;
  }

  /** No more data will be yielded (ended, failed or cancelled). */
  get isDone(): boolean {
    return this.done;
  }

  fail(e: unknown, tellService: boolean): void {
    if (this.settled) return;
    if (tellService) tellCancel(this.nc, this.req.requestId);
    this.failure = e;
    this.finish();
    this.rejectEnd(e);
  }

  private finish(): void {
    this.settled = true;
    this.done = true;
    this.release();
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
    tellCancel(this.nc, this.req.requestId);
    this.graceUntil = performance.now() + (this.opts.cancelGraceMs ?? 5_000);
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

/** Asks the replica holding a request to abort it; a closed connection has nobody to tell. */
function tellCancel(nc: NatsConnection, requestId: string): void {
  try {
    nc.publish(Subjects.cancel, requestId);
  } catch {
    // closed or draining: the replica's deadline ends the work
  }
}

function readEnd(data: Uint8Array, into?: { partialUsage: UsageReport | null }): EndFrame {
  const kind = data[0];
  const body = JSON.parse(dec.decode(data.subarray(1)));
  if (kind === FrameKind.end) return body as EndFrame;
  if (kind === FrameKind.error) {
    const frame = body as ErrorFrame;
    const err = ApiError.fromWire(frame);
    if (frame.usage) {
      if (into) into.partialUsage = frame.usage;
      usageOfFailure.set(err, frame.usage);
    }
    throw err;
  }
  throw ApiError.internal();
}

/** The usage an error frame carried, by the error it became (see usageOfError). */
const usageOfFailure = new WeakMap<object, UsageReport>();

/**
 * The usage of work that failed after it had used tokens (its error frame carried it: a shutdown, or a
 * tools loop cut short by a refused search), for a unary caller that has only the error; null if none.
 */
export function usageOfError(e: unknown): UsageReport | null {
  return e !== null && typeof e === 'object' ? (usageOfFailure.get(e) ?? null) : null;
}

const NATS_DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** The JSON of each catalog entry sent in an envelope, by the entry (catalog entries live as long as their catalog). */
const modelJsonOf = new WeakMap<object, string>();

/**
 * `JSON.stringify(req)` without serialising the catalog entry again for every request: the entry (about
 * 530 of the chat envelope's 790 bytes, and most of its fields) is stringified once per entry object and
 * spliced in, so per request only the request's own fields are. The bytes parse to the same object (the
 * `model` key comes last). Entries are never mutated once loaded (a catalog change loads new objects).
 */
export function envelopeJson(req: ServiceRequest<unknown>): string {
  const { model, ...rest } = req;
  if (model === null || typeof model !== 'object') return JSON.stringify(req);
  let m = modelJsonOf.get(model);
  if (m === undefined) {
    m = JSON.stringify(model);
    modelJsonOf.set(model, m);
  }
  const head = JSON.stringify(rest);
  return head === '{}' ? `{"model":${m}}` : `${head.slice(0, -1)},"model":${m}}`;
}

/** 413 for a request that cannot travel to its service in one NATS message (`size` bytes, `max` allowed). */
export function envelopeTooLarge(size: number, max: number): ApiError {
  return new ApiError(
    413,
    `The request is too large for the model service (${size} bytes; at most ${max}). Send fewer or shorter inputs per request.`,
    { type: ErrorType.invalidRequest, code: 'request_too_large' },
  );
}

function noService(): ApiError {
  return new ApiError(503, 'The model service is not available right now; retry later.', {
    type: 'server_error',
    code: 'service_unavailable',
  });
}

function replicaGone(): ApiError {
  return new ApiError(503, 'The model service stopped answering (its replica is gone); retry the request.', {
    type: 'server_error',
    code: 'service_unavailable',
  });
}

function natsDown(): ApiError {
  return new ApiError(503, 'The service bus is unreachable right now; retry shortly.', {
    type: 'server_error',
    code: 'service_unavailable',
  });
}

function mapNatsError(e: unknown): ApiError {
  const err = e as { name?: string; isNoResponders?: () => boolean; message?: string };
  if (err?.name === 'NoRespondersError' || err?.isNoResponders?.()) return noService();
  if (err?.name === 'TimeoutError' || /timeout/i.test(err?.message ?? '')) {
    return ApiError.internal('The model service did not answer in time.');
  }
  return ApiError.internal();
}

export type { UsageReport };

/** The images a request asked for (`n`, default 1): what a successful image request is priced by. */
function imagesAsked(body: unknown): number {
  const n = (body as { n?: unknown } | null)?.n;
  return typeof n === 'number' && n > 0 ? n : 1;
}
