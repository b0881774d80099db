import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { activeTracer, startRequestSpan } from '@infer/service-kit';
import {
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteHandlerMethod,
  RouteOptions,
} from 'fastify';

/** Response header that names the trace of the request (tracing on). */
export const TRACE_ID_HEADER = 'x-trace-id';

/**
 * The request's trace, kept on the raw request under one symbol, in an object of one shape whether
 * the request is sampled or not: Node's, Fastify's and Nest's code that handles every request then
 * sees one hidden class of IncomingMessage at any sampling ratio (properties added only to sampled
 * requests made two, and their call sites polymorphic, at 10 %). No WeakMap.
 */
const TRACE = Symbol('infer.request-trace');
class RequestTrace {
  /** The Fastify request, for a sampled request's span attributes (set in onRequest). */
  freq: FastifyRequest | undefined = undefined;
  constructor(
    readonly ctx: Context,
    readonly traceId: string,
    /** Only when the span records. */
    readonly span: Span | undefined,
  ) {}
}
interface TracedMessage extends IncomingMessage {
  [TRACE]?: RequestTrace;
}

/** The trace id of a request (tracing on), read from its raw request: no context lookup. */
export function requestTraceId(raw: IncomingMessage): string | undefined {
  return (raw as TracedMessage)[TRACE]?.traceId;
}

/** The API's key of the active span in a context (its createContextKey is Symbol.for(description)). */
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');

/**
 * The context of a request with no incoming `traceparent` (most of them): only its span. The API's own
 * (`trace.setSpan(ROOT_CONTEXT, span)`) copies a Map and makes three closures for each one, which
 * measured about 6 us of a request's tracing work with cold caches (bench/telemetry.ts); this is one
 * object of one field. Whatever sets a value on it gets the API's kind back.
 */
class RequestContext implements Context {
  constructor(private readonly span: Span) {}
  getValue(key: symbol): unknown {
    return key === SPAN_KEY ? this.span : undefined;
  }
  setValue(key: symbol, value: unknown): Context {
    return trace.setSpan(ROOT_CONTEXT, this.span).setValue(key, value);
  }
  deleteValue(key: symbol): Context {
    return key === SPAN_KEY ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, this.span);
  }
}

/** True when the API reads a span from a RequestContext (checked once: falls back to its own contexts). */
function ownContextsWork(): boolean {
  const probe = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
  return trace.getSpan(new RequestContext(probe)) === probe;
}

/** One options object for every request's span (startSpan does not keep or change it). */
const SERVER_SPAN: SpanOptions = { kind: SpanKind.SERVER };

/** Route and who asked (by id: never the key itself), known once the request has been handled. */
function describe(span: Span, req: FastifyRequest): void {
  const route = req.routeOptions.url ?? 'unmatched';
  span.updateName(`${req.method} ${route}`);
  span.setAttribute('http.route', route);
  span.setAttribute('infer.request_id', String(req.id));
  if (req.auth) {
    span.setAttribute('infer.member_id', req.auth.memberId);
    span.setAttribute('infer.key_id', req.auth.keyId);
    span.setAttribute('infer.tier', req.auth.tier);
  }
}

/** `close` listener of a sampled request's response (`this`: the response; no closure per request). */
function endServerSpan(this: ServerResponse): void {
  const t = (this.req as TracedMessage)[TRACE];
  const span = t?.span;
  if (!span) return;
  if (t.freq) describe(span, t.freq);
  const status = this.writableFinished ? this.statusCode : 499;
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * Fastify onRequest hook: the `x-trace-id` header, set through Fastify (a header set on the raw
 * response before Fastify's own would send every one of them through Node's slow writeHead path), and,
 * for a sampled request, its Fastify request for the span's attributes.
 */
function onRequest(req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const t = (req.raw as TracedMessage)[TRACE];
  if (t) {
    reply.header(TRACE_ID_HEADER, t.traceId);
    t.freq = req;
  }
  done();
}

/**
 * Fastify onRoute hook (start-up): the route's handler runs inside its request's context. The body
 * arrives on the socket's events, outside that context; the rest of the request (guards, handlers, the
 * NATS call, the stream relay, their log lines) re-enters it here, once. A wrapper made at start-up
 * instead of a preHandler hook: Fastify then runs no preHandler hook chain for any request (its runner
 * makes three closures per request), and the unsampled path stays one test and one `context.with`.
 * A request that came in without the server's listener (Fastify's inject) runs as it is.
 */
function enterContextInHandler(this: FastifyInstance, route: RouteOptions): void {
  const handler = (route.handler as RouteHandlerMethod).bind(this);
  route.handler = function inRequestContext(req: FastifyRequest, reply: FastifyReply) {
    const t = (req.raw as TracedMessage)[TRACE];
    return t === undefined ? handler(req, reply) : context.with(t.ctx, handler, undefined, req, reply);
  } as RouteHandlerMethod;
}

/**
 * With tracing on, gives every HTTP request a SERVER span that continues an incoming `traceparent`,
 * made active in the route's handler for the request's own work (guards, handlers, the NATS call, the
 * stream relay), and a response header with its trace id. Off (no tracer), installs nothing. Call it
 * before any route is registered (routes added earlier run outside their request's context).
 *
 * A request the sampler leaves out (90 % of them at a 10 % ratio) costs: the `traceparent` parse when
 * the client sent one, the sampler's decision (startRequestSpan: no SDK span, a non-recording one with
 * new ids from the pool), one context, the response header (one onRequest hook), and the context
 * entered once around the handler (so the NATS call can pass `traceparent` with sampled=0 on, and log
 * lines name the trace). No attributes, no listener, no closure, no preHandler hook. The request
 * listener does not enter the context: what runs before the handler (routing, onRequest hooks, the
 * body's parsing) logs nothing of the request or reads its trace id from the raw request
 * (`requestTraceId`, the gateway's access line).
 *
 * Why not @opentelemetry/instrumentation-http + instrumentation-fastify: they patch node:http and
 * fastify at module load (before our imports; the ESM loader hook they need does not run under our
 * registerHooks loader) and make several spans per request; one span per request, made here, is
 * what the gateway's budget allows (bench/telemetry.ts).
 */
export function traceHttpServer(server: Server, f: FastifyInstance): void {
  const tracer = activeTracer;
  if (!tracer) return;
  const own = ownContextsWork();
  const listeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: TracedMessage, res: ServerResponse) => {
    // No traceparent (most API clients): nothing to parse.
    const parent =
      req.headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, req.headers);
    const span = startRequestSpan('HTTP', SERVER_SPAN, parent);
    const ctx = parent === ROOT_CONTEXT && own ? new RequestContext(span) : trace.setSpan(parent, span);
    const recording = span.isRecording();
    req[TRACE] = new RequestTrace(ctx, span.spanContext().traceId, recording ? span : undefined);
    if (recording) {
      span.updateName(req.method ?? 'HTTP');
      span.setAttribute('http.request.method', req.method ?? '');
      res.once('close', endServerSpan);
    }
    // Not entered here: what runs before the handler (routing, onRequest hooks, the body's parsing)
    // reads the trace from the raw request (requestTraceId) or logs nothing; the handler enters it.
    for (const l of listeners) l.call(server, req, res);
  });
  f.addHook('onRequest', onRequest);
  // Routes registered from here on (call this before any route is).
  f.addHook('onRoute', enterContextInHandler);
}
