import { type Context, ROOT_CONTEXT, type Span, type TraceState, trace } from '@opentelemetry/api';

/** The API's key of the active span in a context (its createContextKey is Symbol.for(description)). */
export const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');

/**
 * The context of one request entering this process (the gateway's HTTP requests): its trace id, span
 * id and sampled flag as plain fields, and its span only once something asks for it. A request the
 * sampler leaves out (90 % of them at a 10 % ratio) then costs one object and two id strings: no
 * NonRecordingSpan, no span context object, no Map of the API's contexts (`trace.setSpan` copies a
 * Map and makes three closures). Code of ours that runs in a request reads the fields directly
 * (currentTraceId for log lines, rpcPublishOptions for the NATS `traceparent`, inSampledTrace);
 * anything else (the API, instrumentations) gets the span as from any context: `getValue(SPAN_KEY)`
 * makes the non-recording one on first use. Whatever sets a value on it gets the API's kind back.
 */
export class RequestTraceContext implements Context {
  /**
   * What the server attaches to the request (the gateway: its Fastify request, for a sampled span's
   * attributes at the end). Declared here so that every request's object has one shape.
   */
  request: unknown = undefined;

  constructor(
    readonly traceId: string,
    readonly spanId: string,
    /** TraceFlags: 1 sampled (then `span` is the SDK's recording span), 0 not. */
    readonly traceFlags: number,
    readonly traceState: TraceState | undefined,
    /** The recording span of a sampled request; made on first use for one left out. */
    private span: Span | undefined,
  ) {}

  /** True when the sampler kept the request (its span records). */
  get sampled(): boolean {
    return this.traceFlags === 1;
  }

  /** The recording span of a sampled request, undefined for one left out (without making one). */
  get recordingSpan(): Span | undefined {
    return this.traceFlags === 1 ? this.span : undefined;
  }

  /** The request's span (a non-recording one, made now, for a request the sampler left out). */
  activeSpan(): Span {
    let s = this.span;
    if (s === undefined) {
      s = trace.wrapSpanContext({
        traceId: this.traceId,
        spanId: this.spanId,
        traceFlags: this.traceFlags,
        traceState: this.traceState,
      });
      this.span = s;
    }
    return s;
  }

  /** The same request in the API's own kind of context (where the API would not read ours). */
  apiContext(): Context {
    return trace.setSpan(ROOT_CONTEXT, this.activeSpan());
  }

  getValue(key: symbol): unknown {
    return key === SPAN_KEY ? this.activeSpan() : undefined;
  }

  setValue(key: symbol, value: unknown): Context {
    return trace.setSpan(ROOT_CONTEXT, this.activeSpan()).setValue(key, value);
  }

  deleteValue(key: symbol): Context {
    return key === SPAN_KEY ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, this.activeSpan());
  }
}

/** True when the API reads a span from a RequestTraceContext (checked at start: else the API's own). */
export function requestContextsWork(): boolean {
  const ctx = new RequestTraceContext('1'.repeat(32), '2'.repeat(16), 0, undefined, undefined);
  const span = trace.getSpan(ctx);
  return span !== undefined && span === ctx.activeSpan() && span.spanContext().traceId === ctx.traceId;
}
