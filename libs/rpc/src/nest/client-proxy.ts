import type { EndFrame, ServiceRequest } from '@infer/contracts';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import type { NatsConnection } from '../nats.js';
import { type CallOptions, RpcClient, type RpcStream } from '../rpc.js';

const dec = new TextDecoder();

/** Default silence limit for `send()` (ms): the typed `call`/`stream` take theirs per call. */
const DEFAULT_IDLE_MS = 120_000;

/**
 * The gateway's side of the NATS RPC transport, as a Nest `ClientProxy`. Nest's standard
 * `send(subject, envelope)` works (an Observable of the stream's chunks, then the end frame; unsubscribing
 * cancels the work down to the engine), and the typed calls the gateway's hot path uses, `call()` and
 * `stream()`, hand raw frames through without re-serialising them (ADR 0001).
 */
export class NatsRpcClientProxy extends ClientProxy {
  private readonly rpc: RpcClient;

  constructor(
    private readonly nc: NatsConnection,
    private readonly defaults: CallOptions = { idleTimeoutMs: DEFAULT_IDLE_MS },
  ) {
    super();
    this.rpc = new RpcClient(nc);
    this._status$.next('connected');
  }

  /** One request, one end frame (unary endpoints). */
  call<B>(subject: string, req: ServiceRequest<B>, opts: CallOptions): Promise<EndFrame> {
    return this.rpc.call(subject, req, opts);
  }

  /** A streamed request: raw chunk payloads, then the end frame (usage) or an ApiError. */
  stream<B>(subject: string, req: ServiceRequest<B>, opts: CallOptions): RpcStream {
    return this.rpc.stream(subject, req, opts);
  }

  /** Tells whichever replica holds the request to abort it. */
  cancel(requestId: string): void {
    this.rpc.cancel(requestId);
  }

  async connect(): Promise<NatsConnection> {
    return this.nc;
  }

  /** The connection belongs to whoever opened it (the gateway's module): nothing to close here. */
  close(): void {}

  unwrap<T>(): T {
    return this.nc as T;
  }

  override on(): never {
    throw new Error('NatsRpcClientProxy has no events to listen to');
  }

  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const subject = this.normalizePattern(packet.pattern);
    const req = packet.data as ServiceRequest;
    const st = this.rpc.stream(subject, req, this.defaults);
    let done = false;
    void (async () => {
      try {
        for await (const chunk of st) callback({ response: JSON.parse(dec.decode(chunk)) });
        const end = await st.end;
        done = true;
        callback({ response: end, isDisposed: true });
      } catch (err) {
        done = true;
        callback({ err });
      }
    })();
    return () => {
      if (!done) st.cancel();
    };
  }

  protected async dispatchEvent<T>(packet: ReadPacket): Promise<T> {
    this.nc.publish(this.normalizePattern(packet.pattern), JSON.stringify(packet.data));
    return undefined as T;
  }
}
