import { ApiError, type EndFrame, type ServiceRequest } from '@infer/contracts';
import type { NatsRpcClientProxy } from '@infer/rpc';

/**
 * Unary endpoints whose JSON reply can be larger than one NATS message (1 MiB by default): 2048
 * embeddings of 4096 floats are ~40 MB. The service sends the long list as data frames, each a JSON
 * array of consecutive items (embedding-service `emitInFrames`), and ends with the reply's other fields
 * in the end frame's `data`, the list field empty. The gateway joins the frames, in order, into that
 * field, byte for byte (no parse and re-serialise of the items).
 */
export interface CollectSpec {
  /** The list field of the reply that the data frames fill (`data` for embeddings, `results` for rerank). */
  field: string;
}

export interface Collected {
  end: EndFrame;
  /** The whole JSON reply. */
  body: Buffer;
}

const OPEN = 0x5b; // [
const CLOSE = 0x5d; // ]
/**
 * Runs the request as a stream of list frames and returns the joined reply. `onClientGone` receives a
 * canceller: the caller wires it to the client's connection so that a client that leaves stops the
 * work (and, for embeddings, takes its texts out of the pending batch).
 */
export async function collectList(
  rpc: Pick<NatsRpcClientProxy, 'stream'>,
  subject: string,
  envelope: ServiceRequest,
  spec: CollectSpec,
  opts: { idleTimeoutMs: number; onClientGone(cancel: () => void): void },
): Promise<Collected> {
  const st = rpc.stream(subject, { ...envelope, stream: true }, { idleTimeoutMs: opts.idleTimeoutMs });
  opts.onClientGone(() => st.cancel());
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const frame of st) {
    // A frame is a JSON array: keep what is between its brackets.
    if (frame.length < 2 || frame[0] !== OPEN || frame[frame.length - 1] !== CLOSE) {
      st.cancel();
      throw ApiError.internal();
    }
    if (frame.length === 2) continue;
    const inner = Buffer.from(frame.buffer, frame.byteOffset + 1, frame.length - 2);
    parts.push(inner);
    bytes += inner.length;
  }
  const end = await st.end;
  return { end, body: joinList(end.data, spec.field, parts, bytes) };
}

/** `data` with `field` set to the concatenation of the frames' items, as JSON bytes. */
export function joinList(data: unknown, field: string, parts: readonly Buffer[], bytes = -1): Buffer {
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw ApiError.internal();
  const mark = `\u0000collect\u0000${field}`;
  const json = JSON.stringify({ ...(data as Record<string, unknown>), [field]: mark });
  const at = json.indexOf(JSON.stringify(mark));
  if (at < 0) throw ApiError.internal();
  const head = Buffer.from(`${json.slice(0, at)}[`);
  const tail = Buffer.from(`]${json.slice(at + JSON.stringify(mark).length)}`);
  const chunks: Buffer[] = [head];
  parts.forEach((p, i) => {
    if (i > 0) chunks.push(COMMA);
    chunks.push(p);
  });
  chunks.push(tail);
  const total = bytes >= 0 ? head.length + tail.length + bytes + Math.max(0, parts.length - 1) : undefined;
  return Buffer.concat(chunks, total);
}

const COMMA = Buffer.from(',');
