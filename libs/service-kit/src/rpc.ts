import {
  ApiError,
  type EndFrame,
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

/**
 * The service side: subscribes each subject in the service's queue group (replicas share the load),
 * listens for cancels on a plain subscription, aborts work at its deadline, and turns any failure into
 * an error frame (ApiError as it is; anything else as a clean 500).
 */
export class RpcServer {
  private readonly inflight = new Map<string, AbortController>();
  private readonly subs: Subscription[] = [];

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
    this.subs.push(
      this.nc.subscribe(subject, {
        queue: this.queue,
        callback: (err, msg) => {
          if (err) {
            this.log.error({ err, subject }, 'subscription error');
            return;
          }
          void this.dispatch(msg, handler as RpcHandler);
        },
      }),
    );
  }

  private async dispatch(msg: Msg, handler: RpcHandler): Promise<void> {
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
      this.nc.publish(reply, encodeFrame(FrameKind.end, JSON.stringify(end)));
    } catch (e) {
      const wire = toWireError(e, ac.signal);
      if (wire.status >= 500) log.error({ err: e }, 'handler failed');
      this.nc.publish(reply, encodeFrame(FrameKind.error, JSON.stringify(wire)));
    } finally {
      clearTimeout(timer);
      this.inflight.delete(req.requestId);
    }
  }

  async close(): Promise<void> {
    for (const ac of this.inflight.values()) ac.abort(new Error('service shutting down'));
    for (const s of this.subs) s.unsubscribe();
  }
}

function toWireError(e: unknown, signal: AbortSignal): WireError {
  if (e instanceof ApiError) return e.toWire();
  if (signal.aborted && signal.reason instanceof ApiError) return signal.reason.toWire();
  return ApiError.internal().toWire();
}

/** A stream as the gateway sees it: raw chunk payloads to relay, then the end (usage) or an ApiError. */
export interface RpcStream extends AsyncIterable<Uint8Array> {
  /** Resolves after iteration ends normally, with the end frame. */
  readonly end: Promise<EndFrame>;
  /** Stops listening and tells the service to abort the work. */
  cancel(): void;
}

export interface CallOptions {
  /** Give up when no frame arrives for this long (ms). */
  idleTimeoutMs: number;
}

/**
 * The gateway side. Unary calls use NATS request/reply; streams use a private inbox that receives
 * data frames in order, ended by an end or error frame. No responders (no service up) and silence
 * become clean ApiErrors; the service is told to stop when the caller cancels.
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
    const inbox = createInbox();
    const sub = this.nc.subscribe(inbox);
    const nc = this.nc;
    let resolveEnd!: (e: EndFrame) => void;
    let rejectEnd!: (e: unknown) => void;
    const end = new Promise<EndFrame>((res, rej) => {
      resolveEnd = res;
      rejectEnd = rej;
    });
    end.catch(() => undefined);
    let finished = false;
    const cancel = () => {
      if (finished) return;
      finished = true;
      sub.unsubscribe();
      nc.publish(Subjects.cancel, req.requestId);
      rejectEnd(new ApiError(499, 'Client closed the request.'));
    };
    nc.publish(subject, JSON.stringify(req), { reply: inbox });

    async function* frames(): AsyncGenerator<Uint8Array> {
      const it = sub[Symbol.asyncIterator]();
      try {
        while (true) {
          let timer: NodeJS.Timeout | undefined;
          const idle = new Promise<never>((_, rej) => {
            timer = setTimeout(() => rej(ApiError.internal('The model service did not answer in time.')), opts.idleTimeoutMs);
          });
          let next: IteratorResult<Msg>;
          try {
            next = await Promise.race([it.next(), idle]);
          } finally {
            clearTimeout(timer);
          }
          if (next.done) return;
          const m = next.value;
          if (m.data.length === 0) {
            // A status message: 503 means nobody subscribes to the subject.
            if (m.headers?.code === 503) throw noService(subject);
            continue;
          }
          const kind = m.data[0];
          if (kind === FrameKind.data) {
            yield m.data.subarray(1);
          } else {
            finished = true;
            const endFrame = readEnd(m.data);
            resolveEnd(endFrame);
            return;
          }
        }
      } catch (e) {
        if (!finished) {
          finished = true;
          nc.publish(Subjects.cancel, req.requestId);
        }
        rejectEnd(e);
        throw e;
      } finally {
        sub.unsubscribe();
      }
    }
    const gen = frames();
    return { [Symbol.asyncIterator]: () => gen, end, cancel };
  }
}

function readEnd(data: Uint8Array): EndFrame {
  const kind = data[0];
  const body = JSON.parse(dec.decode(data.subarray(1)));
  if (kind === FrameKind.end) return body as EndFrame;
  if (kind === FrameKind.error) throw ApiError.fromWire(body as WireError);
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
