import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  activeTracer,
  type RequestTraceContext,
  requestContextsWork,
  startRequestTrace,
} from '@infer/telemetry';
import { context, type Span, SpanKind, type SpanOptions, SpanStatusCode } from '@opentelemetry/api';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RouteHandlerMethod,
  RouteOptions,
} from 'fastify';

/** Response header that names the trace of the request (tracing on). */
export const TRACE_ID_HEADER = 'x-trace-id';

/**
 * The request's trace, kept on the raw request under one symbol: its context (a RequestTraceContext,
 * @infer/telemetry: ids and flag as fields, the span only when asked), in an object of one shape whether
 * the request is sampled or not. Node's, Fastify's and Nest's code that handles every request then
 * sees one hidden class of IncomingMessage at any sampling ratio (properties added only to sampled
 * requests made two, and their call sites polymorphic, at 10 %). No WeakMap.
 */
const TRACE = Symbol('infer.request-trace');
interface TracedMessage extends IncomingMessage {
  [TRACE]?: RequestTraceContext;
}

/** The trace id of a request (tracing on), read from its raw request: no context lookup. */
export function requestTraceId(raw: IncomingMessage): string | undefined {
  return (raw as TracedMessage)[TRACE]?.traceId;
}

/**
 * The gateway's onRequest hook's part of tracing (app.ts installHooks: one hook for both): the trace
 * id for the `x-trace-id` header and the access line, and, for a sampled request, its Fastify request
 * kept for the span's attributes at the end. Undefined with tracing off or for a request that did not
 * pass the server's listener (Fastify's inject).
 */
export function tracedRequest(req: FastifyRequest): string | undefined {
  const t = (req.raw as TracedMessage)[TRACE];
  if (t === undefined) return undefined;
  if (t.traceFlags === 1) t.request = req;
  return t.traceId;
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
  const span = t?.recordingSpan;
  if (!span) return;
  if (t.request) describe(span, t.request as FastifyRequest);
  const status = this.writableFinished ? this.statusCode : 499;
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * True when the API reads a span from a RequestTraceContext (checked at start); else the handler
 * enters the API's own kind of context for the request (what it did before RequestTraceContext).
 */
let ownContexts = true;

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
    if (t === undefined) return handler(req, reply);
    return context.with(ownContexts ? t : t.apiContext(), handler, undefined, req, reply);
  } as RouteHandlerMethod;
}

/**
 * With tracing on, gives every HTTP request a SERVER span that continues an incoming `traceparent`,
 * made active in the route's handler for the request's own work (guards, handlers, the NATS call, the
 * stream relay); the gateway's own onRequest hook sets the `x-trace-id` response header from it
 * (tracedRequest). Off (no tracer), installs nothing. Call it before any route is registered (routes
 * added earlier run outside their request's context).
 *
 * A request the sampler leaves out (90 % of them at a 10 % ratio) costs: the `traceparent` parse when
 * the client sent one, the decision (startRequestTrace: without a traceparent, two slices of a pooled
 * hex string and the ratio rule on the pooled bytes; no span, SDK or API object), one context object,
 * the response header (in the gateway's existing onRequest hook), and the context entered once around
 * the handler (so the NATS call can pass `traceparent` with sampled=0 on, and log lines name the
 * trace). No attributes, no listener, no closure, no hook of its own but onRoute (start-up). The
 * request listener does not enter the context: what runs before the handler (routing, onRequest hooks,
 * the body's parsing) logs nothing of the request or reads its trace id from the raw request
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
  ownContexts = requestContextsWork();
  const listeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: TracedMessage, res: ServerResponse) => {
    const t = startRequestTrace(req.headers, 'HTTP', SERVER_SPAN);
    req[TRACE] = t;
    const span = t.recordingSpan;
    if (span !== undefined) {
      span.updateName(req.method ?? 'HTTP');
      span.setAttribute('http.request.method', req.method ?? '');
      res.once('close', endServerSpan);
    }
    // Not entered here: what runs before the handler (routing, onRequest hooks, the body's parsing)
    // reads the trace from the raw request (requestTraceId) or logs nothing; the handler enters it.
    for (const l of listeners) l.call(server, req, res);
  });
  // Routes registered from here on (call this before any route is).
  f.addHook('onRoute', enterContextInHandler);
}
