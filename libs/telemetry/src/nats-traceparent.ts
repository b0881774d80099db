import { type MsgHdrs, headers as natsHeaders } from '@nats-io/transport-node';

const KEY = 'traceparent';
/** The header block with a zero traceparent: `NATS/1.0`, the header line, a blank line (82 bytes). */
const TEMPLATE = Buffer.from(
  `NATS/1.0\r\n${KEY}: 00-${'0'.repeat(32)}-${'0'.repeat(16)}-00\r\n\r\n`,
  'latin1',
);
/** Where the trace id, the span id and the flags' last digit go in it. */
const TRACE_AT = 'NATS/1.0\r\ntraceparent: 00-'.length;
const SPAN_AT = TRACE_AT + 33;
const FLAG_AT = SPAN_AT + 18;

/**
 * NATS message headers that hold only a `traceparent`, encoded by copying the ids' characters into a
 * template. The client's own MsgHdrs (`headers()`) costs a Map, a key canonicalised through an array
 * and a spread, a regex per value, two key searches that each build an array, then a string built in
 * a loop and a TextEncoder call (the TextEncoder call alone costs more than this whole copy: its result
 * is a new off-heap buffer, Buffer.allocUnsafe a slice of Node's pool).
 *
 * What this relies on: nats' publish() sends `options.headers.encode()` (a Uint8Array) as the
 * message's header block (@nats-io/nats-core 3.x, protocol.js; `encode` is not in the MsgHdrs
 * interface). Guarded twice: ownHeadersWork() compares, at start, our bytes with the client's own
 * encoding of the same header and the client's decoding of ours (a difference: the client's MsgHdrs
 * are used, as before), and nats-traceparent.spec publishes through a real server and reads the header
 * back (a client whose publish stopped calling encode() fails there).
 */
export class TraceparentHeaders implements MsgHdrs {
  /**
   * `traceId` (32) and `spanId` (16) lowercase hex, as the pooled id generator and the W3C propagator
   * give them; `traceFlags` 0 or 1.
   */
  constructor(
    private readonly traceId: string,
    private readonly spanId: string,
    private readonly traceFlags: number,
  ) {}

  /** The header value: `00-{trace id}-{span id}-{flags}`. */
  get value(): string {
    return `00-${this.traceId}-${this.spanId}-0${this.traceFlags & 1}`;
  }

  /** The header block as nats' MsgHdrsImpl writes it: `NATS/1.0`, one line per header, a blank line. */
  encode(): Uint8Array {
    const out = Buffer.allocUnsafe(TEMPLATE.length);
    out.set(TEMPLATE);
    const t = this.traceId;
    const s = this.spanId;
    for (let i = 0; i < 32; i++) out[TRACE_AT + i] = t.charCodeAt(i);
    for (let i = 0; i < 16; i++) out[SPAN_AT + i] = s.charCodeAt(i);
    out[FLAG_AT] = 48 + (this.traceFlags & 1);
    return out;
  }

  // The rest of MsgHdrs, for whoever reads the headers back before they are sent (tests).
  readonly hasError = false;
  readonly status = '';
  readonly code = 0;
  readonly description = '';
  get(k: string): string {
    return k === KEY ? this.value : '';
  }
  last(k: string): string {
    return this.get(k);
  }
  has(k: string): boolean {
    return k === KEY;
  }
  keys(): string[] {
    return [KEY];
  }
  values(k: string): string[] {
    return k === KEY ? [this.value] : [];
  }
  set(): void {
    throw new Error('TraceparentHeaders are read-only');
  }
  append(): void {
    throw new Error('TraceparentHeaders are read-only');
  }
  delete(): void {
    throw new Error('TraceparentHeaders are read-only');
  }
  *[Symbol.iterator](): IterableIterator<[string, string[]]> {
    yield [KEY, [this.value]];
  }
}

/** The client's own MsgHdrs, as its internals encode them (undefined: no `encode` any more). */
interface Encodable {
  encode?: () => Uint8Array;
}
interface Decoding {
  decode?: (a: Uint8Array) => MsgHdrs;
}

/**
 * True when the client encodes a `traceparent` header exactly as TraceparentHeaders does, and decodes
 * ours back to it: checked once, at start (a nats upgrade that changed either falls back to its own
 * MsgHdrs, unnoticed by anyone but the bench).
 */
export function ownHeadersWork(): boolean {
  try {
    const ours = new TraceparentHeaders('0123456789abcdef'.repeat(2), 'fedcba9876543210', 1);
    const value = ours.value;
    const theirs = natsHeaders();
    theirs.set(KEY, value);
    const a = (theirs as unknown as Encodable).encode?.();
    const b = ours.encode();
    if (!a || a.length !== b.length || !a.every((x, i) => x === b[i])) return false;
    const decode = (theirs.constructor as unknown as Decoding).decode;
    return decode === undefined || decode(b).get(KEY) === value;
  } catch {
    return false;
  }
}

/** Whether TraceparentHeaders are used: set by startTelemetry (checkOwnHeaders), false until then. */
export const ownHeaders = { ok: false };

/** The start-up check (startTelemetry, tracing on): ownHeadersWork's answer, kept. */
export function checkOwnHeaders(): boolean {
  ownHeaders.ok = ownHeadersWork();
  return ownHeaders.ok;
}
