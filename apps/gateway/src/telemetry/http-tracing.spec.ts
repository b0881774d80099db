import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import { afterEach, describe, it } from 'node:test';
import { currentTraceId, startTelemetry, type TelemetryHandle } from '@infer/telemetry';
import { type Context, context, createContextKey, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type OtlpReceiver, startOtlpReceiver } from '../../../../test/support/otlp-receiver.js';
import { requestTraceId, TRACE_ID_HEADER, tracedRequest, traceHttpServer } from './http-tracing.js';

type Hook = (req: unknown, reply: unknown, done: () => void) => void;
type Handler = (req: unknown, reply: unknown) => unknown;

/** traceHttpServer on a stand-in server and Fastify instance; `request()` drives one request through. */
function install() {
  const server = new EventEmitter();
  const seen: Array<{ traceId: string | undefined; active: string | undefined }> = [];
  server.on('request', (raw: IncomingMessage) => {
    // Fastify's listener: the trace is on the raw request; its context is entered later, around the handler.
    seen.push({ traceId: requestTraceId(raw), active: currentTraceId() });
  });
  const hooks: Record<string, Hook | ((route: { handler: Handler }) => void)> = {};
  const f = {
    addHook: (name: string, fn: Hook) => {
      hooks[name] = fn;
    },
  };
  traceHttpServer(server as unknown as Server, f as unknown as FastifyInstance);
  // A route registered afterwards, as Fastify does: its options through the onRoute hooks first.
  let inHandler: string | undefined;
  let recording: boolean | undefined;
  const route = {
    handler: function (this: unknown, _req: unknown, _reply: unknown) {
      assert.equal(this, f, 'the handler keeps its `this` (the Fastify instance)');
      inHandler = currentTraceId();
      recording = trace.getActiveSpan()?.isRecording();
      return 'sent';
    } as Handler,
  };
  (hooks.onRoute as ((route: { handler: Handler }) => void) | undefined)?.call(f, route);
  const request = (headers: Record<string, string> = {}) => {
    const raw = { method: 'POST', url: '/v1/embeddings', headers };
    const set: Record<string, string> = {};
    const listeners: string[] = [];
    let close: (() => void) | undefined;
    // As Node's ServerResponse, `req` names its request.
    const res = {
      req: raw,
      statusCode: 200,
      writableFinished: true,
      setHeader: (k: string, v: string) => {
        set[k] = v;
      },
      once: (e: string, fn: () => void) => {
        listeners.push(e);
        close = fn;
      },
    };
    server.emit('request', raw, res);
    const freq = {
      raw,
      id: 'req_x',
      method: 'POST',
      routeOptions: { url: '/v1/embeddings' },
      auth: { memberId: 'mem_1', keyId: 'key_1', tier: 'community' },
    };
    const reply = {
      header: (k: string, v: string) => {
        set[k] = v;
      },
    };
    // The gateway's own onRequest hook's part (app.ts installHooks), then any tracing hook of its own.
    const traceId = tracedRequest(freq as unknown as FastifyRequest);
    if (traceId !== undefined) reply.header(TRACE_ID_HEADER, traceId);
    (hooks.onRequest as Hook | undefined)?.(freq, reply, () => undefined);
    inHandler = undefined;
    recording = undefined;
    // The body was read meanwhile (outside the request's context); then Fastify calls the handler.
    const returned = route.handler.call(f, freq, reply);
    assert.equal(returned, 'sent', "the handler's result goes back to Fastify");
    close?.call(res);
    return { set, listeners, inHandler, recording, seen: seen.at(-1) };
  };
  /** A request Fastify's inject() makes: it never passes the server's request listener. */
  const injected = () => {
    const raw = { method: 'GET', url: '/healthz', headers: {} };
    inHandler = 'unset';
    route.handler.call(f, { raw, id: 'req_i', method: 'GET', routeOptions: { url: '/healthz' } }, {});
    return inHandler;
  };
  return { hooks, request, injected };
}

describe('traceHttpServer', () => {
  let h: TelemetryHandle | undefined;
  let otlp: OtlpReceiver | undefined;
  afterEach(async () => {
    await h?.shutdown();
    await otlp?.close();
    h = undefined;
    otlp = undefined;
  });

  async function on(ratio: string) {
    otlp = await startOtlpReceiver();
    h = startTelemetry('gw-test', {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: ratio,
    });
  }

  it('off: installs no hook', () => {
    const { hooks, request } = install();
    assert.deepEqual(Object.keys(hooks), []);
    const r = request();
    assert.deepEqual(r.set, {});
    assert.equal(r.inHandler, undefined);
  });

  it('a request the sampler leaves out: trace id header and context, but no listener and no span exported', async () => {
    await on('0');
    const { request } = install();
    const r = request();
    assert.match(r.set[TRACE_ID_HEADER] ?? '', /^[0-9a-f]{32}$/);
    assert.deepEqual(r.listeners, [], 'no close listener for a span that records nothing');
    assert.equal(r.seen?.traceId, r.set[TRACE_ID_HEADER]);
    assert.equal(r.seen?.active, undefined, 'the request listener runs outside the request context');
    assert.equal(r.inHandler, r.set[TRACE_ID_HEADER], 'the handler runs in the request context');
    assert.equal(currentTraceId(), undefined, 'and the context is left when the handler returns');
    // An incoming traceparent that is not sampled is continued, unsampled.
    const given = 'e'.repeat(32);
    const c = request({ traceparent: `00-${given}-${'f'.repeat(16)}-00` });
    assert.equal(c.set[TRACE_ID_HEADER], given);
    assert.equal(c.inHandler, given);
    await h?.flush();
    assert.equal(otlp?.spans.length, 0);
  });

  it("a request's context (no traceparent) behaves as the API's: values set on it keep its span", async () => {
    await on('1');
    const server = new EventEmitter();
    let ctx: Context | undefined;
    server.on('request', () => undefined);
    const hooks: Record<string, (route: { handler: () => void }) => void> = {};
    traceHttpServer(
      server as unknown as Server,
      {
        addHook: (name: string, fn: (route: { handler: () => void }) => void) => {
          hooks[name] = fn;
        },
      } as unknown as FastifyInstance,
    );
    const route = {
      handler: () => {
        ctx = context.active();
      },
    };
    hooks.onRoute?.(route);
    const raw = { method: 'GET', url: '/v1/models', headers: {} };
    server.emit('request', raw, { req: raw, once: () => undefined });
    (route.handler as (req: unknown, reply: unknown) => void)({ raw }, {});
    assert.ok(ctx);
    const span = trace.getSpan(ctx);
    assert.equal(span?.spanContext().traceId, requestTraceId(raw as unknown as IncomingMessage));
    const key = createContextKey('test key');
    const child = ctx.setValue(key, 7);
    assert.equal(child.getValue(key), 7);
    assert.equal(trace.getSpan(child), span, 'a value set on it keeps the span');
    assert.equal(ctx.getValue(key), undefined, 'and does not change it');
    assert.equal(trace.getSpan(ctx.deleteValue(key)), span);
    assert.equal(trace.getSpan(trace.deleteSpan(ctx)), undefined);
  });

  it("tracing adds only an onRoute hook (the header: the gateway's own onRequest hook; the context: the handler)", async () => {
    await on('0.1');
    const { hooks, injected } = install();
    assert.deepEqual(Object.keys(hooks).sort(), ['onRoute']);
    assert.equal(injected(), undefined, 'a request that skipped the listener runs with no trace');
  });

  it('a sampled request: one SERVER span with route, ids and status, continuing the traceparent', async () => {
    await on('1');
    const { request } = install();
    const given = '1'.repeat(32);
    const parent = '2'.repeat(16);
    const r = request({ traceparent: `00-${given}-${parent}-01` });
    assert.equal(r.set[TRACE_ID_HEADER], given);
    assert.deepEqual(r.listeners, ['close']);
    assert.equal(r.seen?.traceId, given);
    assert.equal(r.inHandler, given);
    assert.equal(r.recording, true);
    await h?.flush();
    const span = otlp?.spans.find((s) => s.traceId === given);
    assert.ok(span);
    assert.equal(span.parentSpanId, parent);
    assert.equal(span.kind, 2);
    assert.equal(span.name, 'POST /v1/embeddings');
    assert.equal(span.attributes['http.route'], '/v1/embeddings');
    assert.equal(span.attributes['http.response.status_code'], 200);
    assert.equal(span.attributes['infer.key_id'], 'key_1');
    assert.equal(span.attributes['infer.member_id'], 'mem_1');
  });
});
