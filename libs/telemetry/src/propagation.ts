import type { EndFrame, ServiceRequest, UsageReport } from '@infer/contracts';
import { type MsgHdrs, headers as natsHeaders } from '@nats-io/transport-node';
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  TraceFlags,
  type TraceState,
  trace,
} from '@opentelemetry/api';
import type { Job } from 'bullmq';
import { GEN_AI_OPERATION, GenAI, genAiOperation } from './genai.js';
import { jobMetrics } from './metrics.js';
import { ownHeaders, TraceparentHeaders } from './nats-traceparent.js';
import { RequestTraceContext } from './request-context.js';
import { activeTracer } from './sdk.js';

const natsSetter: TextMapSetter<MsgHdrs> = {
  set: (carrier, key, value) => carrier.set(key, value),
};
const natsGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (carrier) => (carrier ? carrier.keys() : []),
  get: (carrier, key) => carrier?.get(key) || undefined,
};

interface PublishOptions {
  reply: string;
  headers?: MsgHdrs;
}

/**
 * The gateway's side of one NATS RPC: with tracing off, just `{ reply }` (what the call publishes
 * anyway). With tracing on, a CLIENT span for the hop (ended when the call settles) and W3C trace
 * context in the message headers, so the service's handler span joins the trace.
 */
export function rpcPublishOptions(
  subject: string,
  reply: string,
  req: ServiceRequest<unknown>,
  end: Promise<EndFrame>,
): PublishOptions {
  const tracer = activeTracer;
  if (!tracer) return { reply };
  const ctx = context.active();
  if (ctx instanceof RequestTraceContext && ctx.traceFlags === 0) {
    // A request the sampler left out (most of them): its ids as they are, no span of ours, so the
    // service leaves it out too; no span object made for it either.
    return { reply, headers: traceHeaders(ctx.traceId, ctx.spanId, 0, ctx.traceState) };
  }
  const active = trace.getSpan(ctx);
  if (!active) return { reply };
  if (!active.isRecording()) {
    // A trace the sampler left out: pass it on as it is (no span of ours), so the service leaves it out too.
    const sc = active.spanContext();
    return { reply, headers: traceHeaders(sc.traceId, sc.spanId, sc.traceFlags, sc.traceState) };
  }
  const span = tracer.startSpan(`${subject} send`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'messaging.system': 'nats',
      'messaging.operation.type': 'send',
      'messaging.destination.name': subject,
      'infer.request_id': req.requestId,
      [GenAI.requestModel]: req.model.id,
    },
  });
  end.then(
    (e) => {
      setUsage(span, e.usage);
      span.end();
    },
    (err: unknown) => {
      failSpan(span, err);
      span.end();
    },
  );
  const sc = span.spanContext();
  return { reply, headers: traceHeaders(sc.traceId, sc.spanId, sc.traceFlags, sc.traceState) };
}

/**
 * NATS headers with this W3C trace context: `traceparent` written directly (version 00, trace id,
 * parent id, flags), without a context or a propagator call, in TraceparentHeaders (one encoding,
 * no MsgHdrs) while they encode as the client's own; through the propagator into the client's
 * MsgHdrs when there is a `tracestate` to carry as well.
 */
function traceHeaders(
  traceId: string,
  spanId: string,
  traceFlags: number,
  traceState: TraceState | undefined,
): MsgHdrs {
  if (traceState) {
    const h = natsHeaders();
    const sc = { traceId, spanId, traceFlags, traceState };
    propagation.inject(trace.setSpanContext(ROOT_CONTEXT, sc), h, natsSetter);
    return h;
  }
  // Ids of the W3C lengths (ours, or validated by the propagator) fit TraceparentHeaders' template.
  if (ownHeaders.ok && traceId.length === 32 && spanId.length === 16) {
    return new TraceparentHeaders(traceId, spanId, traceFlags & TraceFlags.SAMPLED);
  }
  const h = natsHeaders();
  h.set('traceparent', `00-${traceId}-${spanId}-0${traceFlags & TraceFlags.SAMPLED}`);
  return h;
}

/**
 * The service's side: runs the handler inside a SERVER span that continues the caller's trace (from the
 * NATS headers) and a GenAI span `{operation} {model}` for the model work it does, with the
 * gen_ai.* attributes and the usage it reports. Off, it calls the handler and nothing else.
 */
export function traceRpcHandler(
  subject: string,
  hdrs: MsgHdrs | undefined,
  req: ServiceRequest<unknown>,
  ctx: { emit(chunk: unknown): void },
  run: () => Promise<EndFrame>,
): Promise<EndFrame> {
  const tracer = activeTracer;
  if (!tracer) return run();
  const parent = hdrs ? propagation.extract(ROOT_CONTEXT, hdrs, natsGetter) : ROOT_CONTEXT;
  const sc = trace.getSpanContext(parent);
  // The caller's trace was not sampled: no spans here either, but log lines still name the trace.
  if (sc && !(sc.traceFlags & TraceFlags.SAMPLED)) return context.with(parent, run);
  const server = tracer.startSpan(
    `${subject} process`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'messaging.system': 'nats',
        'messaging.operation.type': 'process',
        'messaging.destination.name': subject,
        'infer.request_id': req.requestId,
      },
    },
    parent,
  );
  const op = genAiOperation(subject);
  const serverCtx = trace.setSpan(parent, server);
  const gen = tracer.startSpan(
    `${op} ${req.model.id}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [GenAI.operationName]: op,
        [GenAI.requestModel]: req.model.id,
        [GenAI.system]: 'infer',
        'infer.stream': req.stream,
      },
    },
    serverCtx,
  );
  if (req.stream) {
    // Time to first token: the first data frame the handler emits.
    const emit = ctx.emit;
    const t0 = performance.now();
    let first = true;
    ctx.emit = (chunk) => {
      if (first) {
        first = false;
        const ttft = (performance.now() - t0) / 1000;
        gen.setAttribute(GenAI.timeToFirstChunk, ttft);
        gen.addEvent('gen_ai.first_chunk');
      }
      emit(chunk);
    };
  }
  return context.with(trace.setSpan(serverCtx, gen).setValue(GEN_AI_OPERATION, op), run).then(
    (end) => {
      setUsage(gen, end.usage);
      gen.end();
      server.end();
      return end;
    },
    (err: unknown) => {
      failSpan(gen, err);
      failSpan(server, err);
      gen.end();
      server.end();
      throw err;
    },
  );
}

/** Field of a BullMQ job's data that carries the W3C trace context of whoever queued it. */
export const JOB_TRACE_FIELD = 'otel';

type Carrier = Record<string, string>;
type JobProcessor<R> = (job: Job, token: string | undefined, signal: AbortSignal | undefined) => Promise<R>;

/** The job data to queue: as given when tracing is off; with the current trace context when on. */
export function withJobTrace<T extends object>(data: T): T {
  if (!activeTracer) return data;
  const carrier: Carrier = {};
  propagation.inject(context.active(), carrier);
  if (!carrier.traceparent) return data;
  return { ...data, [JOB_TRACE_FIELD]: carrier };
}

/**
 * Wraps a BullMQ processor: each run is timed (infer_bullmq_job_duration_seconds) and, with tracing on,
 * runs in a CONSUMER span that continues the trace of whoever queued the job (the trace context travels
 * in the job data, see withJobTrace).
 */
export function instrumentJobs<R>(queue: string, processor: JobProcessor<R>): JobProcessor<R> {
  return (job, token, signal) => {
    const started = performance.now();
    const tracer = activeTracer;
    let span: Span | undefined;
    let run: () => Promise<R> = () => processor(job, token, signal);
    if (tracer) {
      const carrier = (job.data as Record<string, unknown> | null)?.[JOB_TRACE_FIELD];
      const parent =
        carrier && typeof carrier === 'object'
          ? propagation.extract(ROOT_CONTEXT, carrier as Carrier)
          : ROOT_CONTEXT;
      const s = tracer.startSpan(
        `${queue} process`,
        {
          kind: SpanKind.CONSUMER,
          attributes: {
            'messaging.system': 'bullmq',
            'messaging.operation.type': 'process',
            'messaging.destination.name': queue,
            'infer.job.name': job.name,
            'infer.job.id': String(job.id ?? ''),
            'infer.job.attempt': job.attemptsStarted ?? 0,
          },
        },
        parent,
      );
      span = s;
      run = () => context.with(trace.setSpan(parent, s), () => processor(job, token, signal));
    }
    const done = (outcome: string) => {
      jobMetrics.duration.observe({ queue, name: job.name, outcome }, (performance.now() - started) / 1000);
      span?.setAttribute('infer.job.outcome', outcome);
      span?.end();
    };
    return run().then(
      (r) => {
        done('completed');
        return r;
      },
      (err: unknown) => {
        const outcome = jobOutcome(err);
        if (outcome === 'failed' && span) failSpan(span, err);
        done(outcome);
        throw err;
      },
    );
  };
}

/** BullMQ's "move" errors (waiting for children, delayed, requeued) are not failures. */
function jobOutcome(err: unknown): string {
  const name = (err as Error | null)?.name ?? '';
  if (name === 'WaitingChildrenError') return 'waiting_children';
  if (name === 'DelayedError') return 'delayed';
  if (name === 'WaitingError') return 'requeued';
  if (name === 'RateLimitError') return 'rate_limited';
  return 'failed';
}

/**
 * A span around some work made inside a trace (limits admission, an embedded engine's call; upstream
 * HTTP calls get client spans from the undici instrumentation). Off, or outside a trace, just runs fn.
 */
export function withSpan<R>(
  name: string,
  attributes: Record<string, string | number | boolean>,
  fn: () => Promise<R>,
): Promise<R> {
  const tracer = activeTracer;
  if (!tracer || !inSampledTrace()) return fn();
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes });
  return context.with(trace.setSpan(context.active(), span), fn).then(
    (r) => {
      span.end();
      return r;
    },
    (err: unknown) => {
      failSpan(span, err);
      span.end();
      throw err;
    },
  );
}

/**
 * True inside a trace the sampler kept (tracing on): where a span of ours would be recorded. Callers
 * test it before building a span's name and attributes, so a request left out (most of them at a
 * ratio sampler) builds nothing. A request left out answers from its context's flag (no span made).
 */
export function inSampledTrace(): boolean {
  if (activeTracer === null) return false;
  const ctx = context.active();
  // Left out: its flag says so. Kept: its span, while it records (not once ended, as before).
  if (ctx instanceof RequestTraceContext && ctx.traceFlags === 0) return false;
  return trace.getSpan(ctx)?.isRecording() === true;
}

/**
 * The trace id of the active context, or undefined (tracing off, or outside a trace): the pino
 * mixin's, for every log line. A request's own context answers from its field (no span made).
 */
export function currentTraceId(): string | undefined {
  if (!activeTracer) return undefined;
  const ctx = context.active();
  if (ctx instanceof RequestTraceContext) return ctx.traceId;
  return trace.getSpan(ctx)?.spanContext().traceId;
}

export function setUsage(span: Span, usage: UsageReport | undefined): void {
  if (!usage) return;
  span.setAttribute(GenAI.inputTokens, usage.prompt_tokens);
  span.setAttribute(GenAI.outputTokens, usage.completion_tokens);
}

export function failSpan(span: Span, err: unknown): void {
  const e = err as { status?: number; code?: string; message?: string } | undefined;
  span.setStatus({ code: SpanStatusCode.ERROR, message: e?.message });
  if (e?.code) span.setAttribute('error.type', String(e.code));
  else if (e?.status) span.setAttribute('error.type', String(e.status));
  else span.setAttribute('error.type', (err as Error)?.name ?? 'error');
}

export type { Context };
