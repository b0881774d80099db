import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { activeTracer, failSpan } from '@infer/service-kit';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Response header that names the trace of the request (tracing on). */
export const TRACE_ID_HEADER = 'x-trace-id';

const spans = new WeakMap<IncomingMessage, Span>();
const fastifyReqs = new WeakMap<IncomingMessage, FastifyRequest>();

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

/**
 * With tracing on, gives every HTTP request a SERVER span that continues an incoming `traceparent`,
 * made active for all the work of the request (Fastify hooks, guards, handlers, the NATS call), and a
 * response header with its trace id. Off (no tracer), installs nothing.
 *
 * Why not @opentelemetry/instrumentation-http + instrumentation-fastify: they patch node:http and
 * fastify at module load (before our imports; the ESM loader hook they need does not run under our
 * registerHooks loader) and make several spans per request; one span per request, made here, is
 * what the gateway's budget allows (bench/telemetry.ts).
 */
export function traceHttpServer(server: Server, f: FastifyInstance): void {
  const tracer = activeTracer;
  if (!tracer) return;
  const listeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      req.method ?? 'HTTP',
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? '' } },
      parent,
    );
    spans.set(req, span);
    const ctx = trace.setSpan(parent, span);
    // The body arrives on the request's events and the reply goes out on the response's: both run in
    // the request's context, so every log line and child span of the request is in its trace.
    context.bind(ctx, req);
    context.bind(ctx, res);
    res.setHeader(TRACE_ID_HEADER, span.spanContext().traceId);
    res.once('close', () => {
      const freq = fastifyReqs.get(req);
      if (freq) describe(span, freq);
      const status = res.writableFinished ? res.statusCode : 499;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(ctx, () => {
      for (const l of listeners) l.call(server, req, res);
    });
  });
  f.addHook('onRequest', (req: FastifyRequest, _reply, done) => {
    if (spans.has(req.raw)) fastifyReqs.set(req.raw, req);
    done();
  });
}

/** Marks the request's span failed (an error answered to the client). */
export function failRequestSpan(req: FastifyRequest, err: unknown): void {
  const span = spans.get(req.raw);
  if (span) failSpan(span, err);
}
