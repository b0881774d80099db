import type { ServiceRequest } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { genAiOperation, recordGenAi } from '@infer/telemetry';
import { type CustomTransportStrategy, type MessageHandler, Server } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import type { NatsConnection } from '../nats.js';
import { type HandlerContext, type RpcHandler, RpcServer } from '../rpc.js';

/** Identifies this transport among Nest's (`transportId`). */
export const NATS_RPC_TRANSPORT: unique symbol = Symbol('infer-nats-rpc');

export interface NatsRpcTransportOptions {
  nc: NatsConnection;
  /** The queue group replicas of one service share (QueueGroups in contracts). */
  queue: string;
  log: Logger;
  /** Tests only: prepended to every pattern, so concurrent test stacks do not answer each other. */
  subjectPrefix?: string;
  /** On close, how long work in flight may finish before it is aborted (ms). */
  drainMs?: number;
}

/**
 * A Nest custom transport strategy that speaks our NATS RPC protocol (ADR 0001, libs/rpc/src/
 * rpc.ts): every `@MessagePattern(subject)` of the app's controllers is subscribed in the service's
 * queue group; a controller method receives the request envelope as `@Payload()` and the
 * {@link HandlerContext} (abort signal, `emit` for stream frames, logger) as `@Ctx()`, and returns the
 * end frame (result and usage). Cancel, deadlines, streamed frames, no-responders and the drain on
 * shutdown are the protocol's, unchanged.
 *
 * Nest's own request pipeline (guards, pipes, interceptors, exception filters) runs around each
 * handler; a handler's result is taken as it is when it is not an Observable, so the success path
 * allocates nothing beyond what the handler does.
 */
export class NatsRpcTransport extends Server implements CustomTransportStrategy {
  override readonly transportId = NATS_RPC_TRANSPORT;
  readonly rpc: RpcServer;
  private closing: Promise<void> | undefined;

  constructor(private readonly opts: NatsRpcTransportOptions) {
    super();
    this.rpc = new RpcServer(opts.nc, opts.queue, opts.log);
  }

  /** The subjects answered, with the prefix applied (after listen). */
  readonly subjects: string[] = [];

  listen(callback: (err?: unknown) => void): void {
    const prefix = this.opts.subjectPrefix ?? '';
    for (const [pattern, handler] of this.messageHandlers) {
      if (handler.isEventHandler) {
        callback(new Error(`@EventPattern(${pattern}) is not supported by the NATS RPC transport`));
        return;
      }
      const subject = `${prefix}${pattern}`;
      this.rpc.handle(subject, toRpcHandler(handler, genAiOperation(subject)));
      this.subjects.push(subject);
    }
    this._status$.next('connected');
    this.opts.nc.flush().then(
      () => callback(),
      (err: unknown) => callback(err),
    );
  }

  /** Leaves the queue group, lets work in flight finish (drainMs), aborts the rest. */
  close(): Promise<void> {
    this.closing ??= this.rpc.drain(this.opts.drainMs ?? 0).then(() => this._status$.next('disconnected'));
    return this.closing;
  }

  on(): never {
    throw new Error('NatsRpcTransport has no events to listen to');
  }

  unwrap<T>(): T {
    return this.opts.nc as T;
  }
}

/** The handler on the RPC server, with its GenAI metrics (duration, first chunk, tokens, errors). */
function toRpcHandler(handler: MessageHandler, operation: string): RpcHandler {
  return async (req: ServiceRequest, ctx: HandlerContext) => {
    const started = performance.now();
    let firstAt = 0;
    if (req.stream) {
      const emit = ctx.emit;
      ctx.emit = (chunk) => {
        if (firstAt === 0) firstAt = performance.now();
        emit(chunk);
      };
    }
    try {
      const out = await handler(req, ctx);
      const end = isObservable(out) ? await lastValueFrom(out) : out;
      recordGenAi(operation, req, started, firstAt, end, null);
      return end;
    } catch (e) {
      recordGenAi(operation, req, started, firstAt, null, e);
      throw e;
    }
  };
}
