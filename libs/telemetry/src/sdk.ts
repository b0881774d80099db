import { randomFillSync } from 'node:crypto';
import { createRequire } from 'node:module';
import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  SamplingDecision,
  type Span,
  SpanKind,
  type SpanOptions,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type * as ContextAsyncHooks from '@opentelemetry/context-async-hooks';
import type * as Core from '@opentelemetry/core';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as InstrumentationUndici from '@opentelemetry/instrumentation-undici';
import type * as Resources from '@opentelemetry/resources';
import type * as SdkTrace from '@opentelemetry/sdk-trace';
import type { IdGenerator, Sampler, TracerProvider } from '@opentelemetry/sdk-trace';
import { checkOwnHeaders } from './nats-traceparent.js';
import { RequestTraceContext } from './request-context.js';

// The SDK (about 300 modules, ~23 MiB of RSS) is loaded only when tracing is on: a process with tracing
// off keeps just the API's no-op. `require` (the packages' CommonJS builds) keeps startTelemetry
// synchronous; the API shares its global state across copies (Symbol.for keys), so the SDK's CommonJS
// copy of @opentelemetry/api and our ESM one see the same context manager, propagator and spans.
const require = createRequire(import.meta.url);
let sdkTrace: typeof SdkTrace | undefined;
function sdk(): typeof SdkTrace {
  sdkTrace ??= require('@opentelemetry/sdk-trace') as typeof SdkTrace;
  return sdkTrace;
}

/** What the standard OTEL_* variables ask for; null = tracing off. */
export interface TelemetryConfig {
  /** Full URL of the OTLP/HTTP traces endpoint. */
  tracesUrl: string;
  serviceName: string;
  sampler: Sampler;
  samplerName: string;
  /** The root sampler's decision for a request without a parent, as a bound (rootUpperBound). */
  rootBound: number;
  /** OTEL_RESOURCE_ATTRIBUTES, parsed. */
  resource: Record<string, string>;
  /** The batch span processor's settings (OTEL_BSP_*, OpenTelemetry's defaults). */
  batch: {
    scheduledDelayMillis: number;
    maxExportBatchSize: number;
    maxQueueSize: number;
    exportTimeoutMillis: number;
  };
}

/**
 * An OTEL_BSP_* integer (ms or a count) within [min, max], or its default when unset; anything else
 * stops the start with a message naming the variable.
 */
function bspInt(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name}=${raw}: an integer from ${min} to ${max}`);
  }
  return n;
}

const SAMPLERS = new Set([
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
]);

/**
 * Reads the standard variables (OpenTelemetry's "SDK environment variables" spec): tracing is on only
 * when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set, and neither
 * OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says otherwise. The sampler is
 * OTEL_TRACES_SAMPLER (+ OTEL_TRACES_SAMPLER_ARG), default parentbased_always_on, as OpenTelemetry's specification says.
 * A value we do not know is an error at start, not a silent default.
 */
export function telemetryConfig(env: NodeJS.ProcessEnv, defaultName: string): TelemetryConfig | null {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return null;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? 'otlp').trim().toLowerCase();
  if (exporter === 'none') return null;
  if (exporter !== 'otlp')
    throw new Error(`OTEL_TRACES_EXPORTER=${exporter}: only otlp (or none) is supported`);
  const tracesEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!tracesEndpoint && !base) return null;
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/json'
  ).trim();
  if (protocol !== 'http/json' && protocol !== 'http/protobuf') {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: this build exports OTLP over HTTP (http/json)`);
  }
  const tracesUrl = tracesEndpoint || `${(base as string).replace(/\/+$/, '')}/v1/traces`;
  try {
    new URL(tracesUrl);
  } catch {
    throw new Error(`OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is not a URL: ${tracesUrl}`);
  }
  const samplerName = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  if (!SAMPLERS.has(samplerName)) {
    throw new Error(`OTEL_TRACES_SAMPLER=${samplerName}: one of ${[...SAMPLERS].join(', ')}`);
  }
  let ratio = 1;
  if (samplerName.endsWith('traceidratio')) {
    const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    ratio = arg ? Number(arg) : 1;
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
      throw new Error(`OTEL_TRACES_SAMPLER_ARG=${arg}: a ratio between 0 and 1`);
    }
  }
  const { AlwaysOnSampler, AlwaysOffSampler, TraceIdRatioBasedSampler, ParentBasedSampler } = sdk();
  const root: Sampler = samplerName.endsWith('always_on')
    ? new AlwaysOnSampler()
    : samplerName.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(ratio);
  const sampler = samplerName.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
  const resource: Record<string, string> = {};
  for (const part of (env.OTEL_RESOURCE_ATTRIBUTES ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0)
      resource[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim());
  }
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || resource['service.name'] || defaultName;
  // Each export costs this process a fixed share (an HTTP request) besides its spans: OpenTelemetry's
  // default 5 s delay spreads it over five times more requests than 1 s would (bench/telemetry.ts).
  // Tests that wait for spans set a short delay.
  const maxQueueSize = bspInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000);
  const batch = {
    scheduledDelayMillis: bspInt(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, 0, 3_600_000),
    maxExportBatchSize: Math.min(
      bspInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000),
      maxQueueSize,
    ),
    maxQueueSize,
    exportTimeoutMillis: bspInt(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 3_600_000),
  };
  const rootBound = rootUpperBound(samplerName, ratio);
  return { tracesUrl, serviceName, sampler, samplerName, rootBound, resource, batch };
}

/**
 * Trace and span ids from a pool of random bytes refilled 4 KiB at a time, handed out as slices of the
 * pool's hex string (made once per refill: one randomFillSync and one toString('hex') per 4 KiB, not
 * per id). The SDK's default asks the OS for 8 or 16 bytes per id (randomFillSync each time), the
 * largest share of an unsampled request's tracing cost (bench/telemetry.ts). A slice keeps its pool's 8 KiB string alive, so slices are given only to what
 * dies with its request (an unsampled request's ids, draw()); ids that live in SDK spans until they
 * are exported (seconds) are strings of their own (the SDK's generate*, a kept request's trace id).
 */
export class PooledIdGenerator implements IdGenerator {
  private readonly pool = Buffer.allocUnsafe(4096);
  private hexPool = '';
  private at = this.pool.length;
  /**
   * The trace id the next generateTraceId() returns (then cleared): startRequestTrace draws the id,
   * decides, and hands the same id to the SDK's startSpan for a request it keeps.
   */
  next: string | undefined = undefined;
  /** What the last draw() drew (read right after it). */
  traceId = '';
  spanId = '';

  /** Offset of `bytes` fresh bytes in the pool, none of them handed out before; refills when short. */
  private take(bytes: number): number {
    if (this.at + bytes > this.pool.length) {
      randomFillSync(this.pool);
      this.hexPool = this.pool.toString('hex');
      this.at = 0;
    }
    const start = this.at;
    this.at += bytes;
    return start;
  }

  /** True when the `n` bytes at `start` are all zero (an invalid W3C id; probability 2^-64 or less). */
  private zero(start: number, n: number): boolean {
    for (let i = start; i < start + n; i++) if (this.pool[i] !== 0) return false;
    return true;
  }

  /** A new id of `bytes` bytes, a string of its own (not a slice of the pool's). */
  private hex(bytes: number): string {
    const start = this.take(bytes);
    if (this.zero(start, bytes)) return this.hex(bytes);
    return this.pool.toString('hex', start, start + bytes);
  }

  /**
   * A new trace id and span id (in `traceId`, `spanId`), in one draw of 24 bytes, and whether a ratio
   * sampler with this upper bound keeps the trace: the SDK's TraceIdRatioBasedSampler's rule
   * (ratioKeeps) on the trace id's bytes, without parsing its hex. Left out: both slices of the pool's
   * hex string. Kept: the trace id only, a string of its own (the SDK makes the span id).
   */
  draw(upperBound: number): boolean {
    const start = this.take(24);
    if (this.zero(start, 16) || this.zero(start + 16, 8)) return this.draw(upperBound);
    if (ratioKeeps(this.pool, start, upperBound)) {
      // Kept: the SDK's span holds the trace id until it is exported (no slice; its span id is the SDK's).
      this.traceId = this.pool.toString('hex', start, start + 16);
      this.spanId = '';
      return true;
    }
    const h = this.hexPool;
    this.traceId = h.slice(start * 2, start * 2 + 32);
    this.spanId = h.slice(start * 2 + 32, start * 2 + 48);
    return false;
  }

  generateTraceId(): string {
    const next = this.next;
    if (next === undefined) return this.hex(16);
    this.next = undefined;
    return next;
  }

  generateSpanId(): string {
    return this.hex(8);
  }
}

/**
 * The root sampler's decision as a bound on the trace id (ratioKeeps): the bound of the SDK's
 * TraceIdRatioBasedSampler for a ratio (floor(ratio * (2^32 - 1)), 2^32 at 1); always_on 2^32 (every
 * trace), always_off 0 (none). The parentbased_* samplers use their root's for a request without a
 * parent.
 */
export function rootUpperBound(samplerName: string, ratio: number): number {
  if (samplerName.endsWith('always_on')) return 2 ** 32;
  if (samplerName.endsWith('always_off')) return 0;
  return ratio >= 1 ? 2 ** 32 : ratio <= 0 ? 0 : Math.floor(ratio * 0xffffffff);
}

/**
 * The SDK's TraceIdRatioBasedSampler's rule (@opentelemetry/sdk-trace 3.x), read from the trace id's
 * 16 bytes at `at`: the XOR of its four big-endian 32-bit words, unsigned, below the bound. Every
 * process of ours that decides on a trace id by itself (a `traceidratio` sampler, not parent-based)
 * runs the SDK's sampler, so the gateway must decide as it does (telemetry.spec checks it against it).
 */
export function ratioKeeps(bytes: Uint8Array, at: number, upperBound: number): boolean {
  const b = bytes;
  const x =
    (((b[at] as number) << 24) |
      ((b[at + 1] as number) << 16) |
      ((b[at + 2] as number) << 8) |
      (b[at + 3] as number)) ^
    (((b[at + 4] as number) << 24) |
      ((b[at + 5] as number) << 16) |
      ((b[at + 6] as number) << 8) |
      (b[at + 7] as number)) ^
    (((b[at + 8] as number) << 24) |
      ((b[at + 9] as number) << 16) |
      ((b[at + 10] as number) << 8) |
      (b[at + 11] as number)) ^
    (((b[at + 12] as number) << 24) |
      ((b[at + 13] as number) << 16) |
      ((b[at + 14] as number) << 8) |
      (b[at + 15] as number));
  return x >>> 0 < upperBound;
}

let provider: TracerProvider | null = null;
/** The configured sampler and the provider's id generator, while tracing is on (startRequestSpan). */
let sampler: Sampler | null = null;
let ids: PooledIdGenerator | null = null;
/** The configured sampler's decision for a request without a parent (rootUpperBound). */
let rootBound = 0;
let undici: InstrumentationUndici.UndiciInstrumentation | null = null;
/** The process's tracer while tracing is on; null when off (the hot paths test this and do nothing). */
export let activeTracer: Tracer | null = null;

/** True when this process exports traces. */
export function tracingOn(): boolean {
  return activeTracer !== null;
}

export interface TelemetryHandle {
  readonly enabled: boolean;
  /** Exports what is buffered (tests; before exit). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const OFF: TelemetryHandle = {
  enabled: false,
  flush: async () => undefined,
  shutdown: async () => undefined,
};

/**
 * Starts the OpenTelemetry SDK for this process when the OTEL_* variables ask for it (see
 * telemetryConfig), once: later calls (several apps in one test process) share it. Off, nothing is
 * registered, the API stays its no-op, and the RPC and HTTP paths skip all tracing work.
 */
export function startTelemetry(name: string, env: NodeJS.ProcessEnv = process.env): TelemetryHandle {
  if (provider) return handle(provider);
  const cfg = telemetryConfig(env, name);
  if (!cfg) return OFF;
  const { TracerProvider, BatchSpanProcessor } = sdk();
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  const { UndiciInstrumentation } =
    require('@opentelemetry/instrumentation-undici') as typeof InstrumentationUndici;
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof Resources;
  const { AsyncLocalStorageContextManager } =
    require('@opentelemetry/context-async-hooks') as typeof ContextAsyncHooks;
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof Core;
  sampler = cfg.sampler;
  ids = new PooledIdGenerator();
  rootBound = cfg.rootBound;
  // NATS `traceparent` headers in one encoding, if this nats client encodes them as we do.
  checkOwnHeaders();
  provider = new TracerProvider({
    resource: resourceFromAttributes({ ...cfg.resource, 'service.name': cfg.serviceName }),
    sampler: cfg.sampler,
    idGenerator: ids,
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: cfg.tracesUrl }), ...cfg.batch }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  // HTTP client spans for fetch/undici calls (upstream engines), only inside a trace.
  undici = new UndiciInstrumentation({ requireParentforSpans: true });
  undici.setTracerProvider(provider);
  undici.enable();
  activeTracer = provider.getTracer('infer');
  return handle(provider);
}

function handle(p: TracerProvider): TelemetryHandle {
  return {
    enabled: true,
    flush: () => p.forceFlush(),
    shutdown: async () => {
      if (provider !== p) return;
      undici?.disable();
      undici = null;
      activeTracer = null;
      sampler = null;
      ids = null;
      rootBound = 0;
      provider = null;
      await p.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

const NO_ATTRIBUTES: Attributes = Object.freeze({});
const NO_LINKS: Link[] = Object.freeze([]) as unknown as Link[];

/**
 * The span of a request entering this process (the gateway's HTTP SERVER span), with the sampler's
 * decision made first: a request the sampler leaves out (90 % of them at a 10 % ratio) gets no SDK
 * span at all, only a non-recording span that carries its trace context (trace id from the parent or
 * a new one, a new span id, flags 00), which is what the SDK would return, without its other work
 * (links, attribute cleaning, its self-metrics, a debug log call). A request the sampler keeps is
 * started by the SDK as usual, with the same trace id (so a ratio sampler, which decides by trace id,
 * decides the same again). Same decision as the SDK's for the standard samplers we configure (they
 * depend only on the parent and the trace id). Tracing off: must not be called (activeTracer null).
 */
export function startRequestSpan(name: string, options: SpanOptions, parent: Context): Span {
  const s = sampler as Sampler;
  const gen = ids as PooledIdGenerator;
  const parentSc = trace.getSpanContext(parent);
  const valid = parentSc !== undefined && trace.isSpanContextValid(parentSc);
  const traceId = valid ? parentSc.traceId : gen.generateTraceId();
  const r = s.shouldSample(
    parent,
    traceId,
    name,
    options.kind ?? SpanKind.INTERNAL,
    options.attributes ?? NO_ATTRIBUTES,
    NO_LINKS,
  );
  if (r.decision === SamplingDecision.NOT_RECORD) {
    return trace.wrapSpanContext({
      traceId,
      spanId: gen.generateSpanId(),
      traceFlags: TraceFlags.NONE,
      traceState: r.traceState ?? (valid ? parentSc.traceState : undefined),
    });
  }
  if (!valid) gen.next = traceId;
  return (activeTracer as Tracer).startSpan(name, options, parent);
}

/** A request's headers, as Node gives them (only `traceparent` and `tracestate` are read). */
type IncomingHeaders = Record<string, string | string[] | undefined>;

/**
 * The trace context of a request entering this process (the gateway's HTTP requests), with its span
 * when the sampler keeps it. Without a `traceparent` (most API clients), the configured sampler's
 * decision is made on the pooled bytes of a new trace id (ratioKeeps: the SDK's own rule, so the SDK
 * decides the same again for a request kept and started through it with that id; for the
 * parentbased_* samplers a request without a parent goes to their root sampler): a request left out
 * costs one draw of ids and one object, nothing of the SDK or the API. With one, the SDK's sampler
 * decides (startRequestSpan) and the trace continues. Tracing off: must not be called.
 */
export function startRequestTrace(
  headers: IncomingHeaders,
  name: string,
  options: SpanOptions,
): RequestTraceContext {
  if (headers.traceparent === undefined) {
    const gen = ids as PooledIdGenerator;
    if (!gen.draw(rootBound))
      return new RequestTraceContext(gen.traceId, gen.spanId, 0, undefined, undefined);
    gen.next = gen.traceId;
    return ofSpan((activeTracer as Tracer).startSpan(name, options, ROOT_CONTEXT));
  }
  return ofSpan(startRequestSpan(name, options, propagation.extract(ROOT_CONTEXT, headers)));
}

function ofSpan(span: Span): RequestTraceContext {
  const sc = span.spanContext();
  const flags = sc.traceFlags & TraceFlags.SAMPLED;
  return new RequestTraceContext(sc.traceId, sc.spanId, flags, sc.traceState, span);
}
