import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { activeTracer } from '@infer/service-kit';
import {
  type Context,
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

/** The request's span and context, and its Fastify request, kept on the raw request (no WeakMap). */
const SPAN = Symbol('infer.span');
const CTX = Symbol('infer.trace-context');
const FREQ = Symbol('infer.fastify-request');
interface TracedMessage extends IncomingMessage {
  [SPAN]?: Span;
  [CTX]?: Context;
  [FREQ]?: FastifyRequest;
}

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
  server.on('request', (req: TracedMessage, res: ServerResponse) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(req.method ?? 'HTTP', { kind: SpanKind.SERVER }, parent);
    const ctx = trace.setSpan(parent, span);
    req[SPAN] = span;
    req[CTX] = ctx;
    res.setHeader(TRACE_ID_HEADER, span.spanContext().traceId);
    // A request the sampler left out costs no more than this: its span records nothing.
    if (span.isRecording()) {
      span.setAttribute('http.request.method', req.method ?? '');
      res.once('close', () => {
        const freq = req[FREQ];
        if (freq) describe(span, freq);
        const status = res.writableFinished ? res.statusCode : 499;
        span.setAttribute('http.response.status_code', status);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      });
    }
    // Hooks up to the body's arrival run in the request's context from here ...
    context.with(ctx, () => {
      for (const l of listeners) l.call(server, req, res);
    });
  });
  f.addHook('onRequest', (req: FastifyRequest, _reply, done) => {
    (req.raw as TracedMessage)[FREQ] = req;
    done();
  });
  // ... and the body arrives on the socket's events, outside it: the rest of the request (guards,
  // handlers, the NATS call, the stream relay, their log lines) re-enters it here. Cheaper than binding
  // the request and response emitters (measured: bench/telemetry.ts).
  f.addHook('preHandler', (req: FastifyRequest, _reply, done) => {
    const ctx = (req.raw as TracedMessage)[CTX];
    if (ctx) context.with(ctx, done);
    else done();
  });
}
