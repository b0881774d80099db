import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { EndFrame, ServiceRequest } from '@infer/contracts';
import { context, ROOT_CONTEXT, SamplingDecision, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import { genAiOperation } from './genai.js';
import { createLogger } from './logger.js';
import { TraceparentHeaders } from './nats-traceparent.js';
import {
  currentTraceId,
  inSampledTrace,
  JOB_TRACE_FIELD,
  rpcPublishOptions,
  traceRpcHandler,
  withJobTrace,
} from './propagation.js';
import { RequestTraceContext } from './request-context.js';
import {
  activeTracer,
  PooledIdGenerator,
  ratioKeeps,
  rootUpperBound,
  startRequestSpan,
  startRequestTrace,
  startTelemetry,
  telemetryConfig,
  tracingOn,
} from './sdk.js';

const req = {
  requestId: 'req_1',
  memberId: 'm',
  keyId: 'k',
  model: { id: 'chat-G' },
  body: {},
  deadline: Date.now() + 10_000,
  stream: false,
} as unknown as ServiceRequest<unknown>;
const END: EndFrame = {
  result: {},
  usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
} as EndFrame;

describe('telemetryConfig: the standard OTEL_* variables', () => {
  it('is off when no OTLP endpoint is set, or when disabled', () => {
    assert.equal(telemetryConfig({}, 'x'), null);
    assert.equal(telemetryConfig({ OTEL_TRACES_SAMPLER: 'always_on' }, 'x'), null);
    assert.equal(
      telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, 'x'),
      null,
    );
    assert.equal(
      telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, 'x'),
      null,
    );
  });

  it('derives the traces URL, service name and resource attributes', () => {
    const c = telemetryConfig(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,a=b%20c',
      },
      'gateway',
    );
    assert.equal(c?.tracesUrl, 'http://c:4318/v1/traces');
    assert.equal(c?.serviceName, 'gateway');
    assert.deepEqual(c?.resource, { 'deployment.environment': 'prod', a: 'b c' });
    const t = telemetryConfig(
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:4318/custom', OTEL_SERVICE_NAME: 'gw-eu' },
      'gateway',
    );
    assert.equal(t?.tracesUrl, 'http://t:4318/custom');
    assert.equal(t?.serviceName, 'gw-eu');
  });

  it('builds the sampler the variables name (default parentbased_always_on)', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    assert.match(String(telemetryConfig(base, 'x')?.sampler), /ParentBased\{root=AlwaysOnSampler/);
    const ratio = telemetryConfig(
      { ...base, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
      'x',
    );
    assert.match(String(ratio?.sampler), /ParentBased\{root=TraceIdRatioBased\{0.1\}/);
    assert.match(
      String(telemetryConfig({ ...base, OTEL_TRACES_SAMPLER: 'always_off' }, 'x')?.sampler),
      /AlwaysOff/,
    );
  });

  it('refuses values it does not know instead of guessing', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    assert.throws(
      () => telemetryConfig({ ...base, OTEL_TRACES_SAMPLER: 'sometimes' }, 'x'),
      /OTEL_TRACES_SAMPLER/,
    );
    assert.throws(
      () =>
        telemetryConfig({ ...base, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, 'x'),
      /OTEL_TRACES_SAMPLER_ARG/,
    );
    assert.throws(() => telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, 'x'), /not a URL/);
    assert.throws(() => telemetryConfig({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'x'), /PROTOCOL/);
    assert.throws(
      () => telemetryConfig({ ...base, OTEL_BSP_SCHEDULE_DELAY: 'soon' }, 'x'),
      /OTEL_BSP_SCHEDULE_DELAY/,
    );
    assert.throws(
      () => telemetryConfig({ ...base, OTEL_BSP_MAX_QUEUE_SIZE: '0' }, 'x'),
      /OTEL_BSP_MAX_QUEUE_SIZE/,
    );
  });

  it("reads the batch span processor's OTEL_BSP_* variables, with OpenTelemetry's defaults", () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    assert.deepEqual(telemetryConfig(base, 'x')?.batch, {
      scheduledDelayMillis: 5000,
      maxExportBatchSize: 512,
      maxQueueSize: 2048,
      exportTimeoutMillis: 30_000,
    });
    const c = telemetryConfig(
      {
        ...base,
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_BSP_MAX_QUEUE_SIZE: '100',
        OTEL_BSP_EXPORT_TIMEOUT: '1000',
      },
      'x',
    );
    assert.equal(c?.batch.scheduledDelayMillis, 200);
    // A batch is never larger than the queue.
    assert.equal(c?.batch.maxExportBatchSize, 100);
    assert.equal(c?.batch.exportTimeoutMillis, 1000);
  });
});

describe('PooledIdGenerator', () => {
  it('gives valid W3C ids (lowercase hex, not all zero), all distinct across pool refills', () => {
    const g = new PooledIdGenerator();
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const t = g.generateTraceId();
      const s = g.generateSpanId();
      assert.match(t, /^[0-9a-f]{32}$/);
      assert.match(s, /^[0-9a-f]{16}$/);
      assert.notEqual(t, '0'.repeat(32));
      seen.add(t);
      seen.add(s);
    }
    assert.equal(seen.size, 4000);
  });
});

describe('genAiOperation', () => {
  it('maps subjects (with a test prefix) to gen_ai.operation.name', () => {
    assert.equal(genAiOperation('t1.infer.chat.completions'), 'chat');
    assert.equal(genAiOperation('infer.embedding.embeddings'), 'embeddings');
    assert.equal(genAiOperation('infer.chat.legacy-completions'), 'text_completion');
    assert.equal(genAiOperation('infer.image.generations'), 'image_generation');
  });
});

describe('tracing off then on (one process)', () => {
  it('off: startTelemetry installs nothing, publish options carry no headers, job data is unchanged', async () => {
    const h = startTelemetry('t', {});
    assert.equal(h.enabled, false);
    assert.equal(inSampledTrace(), false);
    assert.equal(tracingOn(), false);
    const opts = rpcPublishOptions('s', 'inbox.1', req, Promise.resolve(END));
    assert.deepEqual(opts, { reply: 'inbox.1' });
    const data = { a: 1 };
    assert.equal(withJobTrace(data), data);
    let ran = 0;
    const end = await traceRpcHandler('s', undefined, req, { emit() {} }, async () => {
      ran++;
      return END;
    });
    assert.equal(end, END);
    assert.equal(ran, 1);
  });

  it('on: NATS headers carry the trace, the handler joins it, job data carries it, logs name it', async () => {
    const bodies: string[] = [];
    const server = createServer((r, res) => {
      let b = '';
      r.on('data', (c) => {
        b += c;
      });
      r.on('end', () => {
        bodies.push(b);
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const h = startTelemetry('unit', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
    try {
      assert.equal(h.enabled, true);
      assert.ok(activeTracer);
      const root = activeTracer.startSpan('root');
      const lines: string[] = [];
      const log = createLogger(
        'unit',
        'info',
        new Writable({
          write(chunk, _enc, cb) {
            lines.push(String(chunk));
            cb();
          },
        }),
      );
      await context.with(trace.setSpan(context.active(), root), async () => {
        const opts = rpcPublishOptions('s', 'inbox.1', req, Promise.resolve(END));
        const tp = opts.headers?.get('traceparent') ?? '';
        assert.match(tp, new RegExp(`^00-${root.spanContext().traceId}-[0-9a-f]{16}-01$`));
        const job = withJobTrace({ a: 1 }) as Record<string, unknown>;
        assert.match(String((job[JOB_TRACE_FIELD] as Record<string, string>).traceparent), /^00-/);
        log.info('inside');
        assert.equal(inSampledTrace(), true);
        // The service side, in a fresh context: the handler's span continues the trace of the headers.
        await context.with(trace.deleteSpan(context.active()), () =>
          traceRpcHandler('s', opts.headers, req, { emit() {} }, async () => {
            assert.equal(trace.getActiveSpan()?.spanContext().traceId, root.spanContext().traceId);
            return END;
          }),
        );
      });
      // A trace the sampler left out (here: the caller's traceparent said so): the NATS headers carry
      // it with sampled=0 and no span of ours; the service side runs in it (its logs name it) unrecorded.
      const out = trace.wrapSpanContext({
        traceId: 'c'.repeat(32),
        spanId: 'd'.repeat(16),
        traceFlags: TraceFlags.NONE,
      });
      await context.with(trace.setSpan(ROOT_CONTEXT, out), async () => {
        assert.equal(inSampledTrace(), false);
        const opts = rpcPublishOptions('s', 'inbox.2', req, Promise.resolve(END));
        assert.equal(opts.headers?.get('traceparent'), `00-${'c'.repeat(32)}-${'d'.repeat(16)}-00`);
        await context.with(ROOT_CONTEXT, () =>
          traceRpcHandler('s', opts.headers, req, { emit() {} }, async () => {
            const active = trace.getActiveSpan();
            assert.equal(active?.spanContext().traceId, 'c'.repeat(32));
            assert.equal(active?.isRecording(), false);
            return END;
          }),
        );
      });
      log.info({ a: 1 }, 'outside');
      log.info({ b: 2 }, 'outside again');
      root.end();
      assert.equal(JSON.parse(lines[0] as string).trace_id, root.spanContext().traceId);
      assert.equal(JSON.parse(lines[1] as string).trace_id, undefined);
      // Lines with fields of their own, outside a trace: no field leaks from one line to the next.
      assert.equal(JSON.parse(lines[1] as string).a, 1);
      assert.equal(JSON.parse(lines[2] as string).a, undefined);
      assert.equal(JSON.parse(lines[2] as string).b, 2);
      await h.flush();
      const exported = bodies.join('');
      assert.match(exported, /"gen_ai.usage.output_tokens"/);
      assert.match(exported, new RegExp(root.spanContext().traceId));
    } finally {
      await h.shutdown();
      server.close();
    }
    assert.equal(tracingOn(), false);
  });
});

describe('startRequestSpan: the sampler decides before any SDK span', () => {
  /** Tracing on with these sampler variables, exporting to a local sink that answers 200. */
  async function on(env: Record<string, string>) {
    const server = createServer((r, res) => {
      r.resume();
      r.on('end', () => res.end('{}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const h = startTelemetry('unit', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, ...env });
    return {
      stop: async () => {
        await h.shutdown();
        server.close();
      },
    };
  }

  it('a ratio sampler keeps exactly the trace ids it would keep; the rest get a non-recording span', async () => {
    const h = await on({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' });
    try {
      // The same decision, by trace id alone: the span the SDK records must carry the id the
      // decision was made on (a fresh id drawn by the SDK would disagree about half of the time).
      const ratio = new TraceIdRatioBasedSampler(0.5);
      const kept = (traceId: string) =>
        ratio.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
      let recorded = 0;
      for (let i = 0; i < 400; i++) {
        const span = startRequestSpan('HTTP', { kind: SpanKind.SERVER }, ROOT_CONTEXT);
        const sc = span.spanContext();
        assert.ok(trace.isSpanContextValid(sc), 'valid ids either way');
        assert.equal(span.isRecording(), kept(sc.traceId), sc.traceId);
        assert.equal(sc.traceFlags, span.isRecording() ? TraceFlags.SAMPLED : TraceFlags.NONE);
        if (span.isRecording()) recorded++;
        span.end();
      }
      assert.ok(recorded > 100 && recorded < 300, `about half recorded: ${recorded}`);
    } finally {
      await h.stop();
    }
  });

  it("parentbased: an incoming traceparent's flag decides, and its trace id is continued", async () => {
    const h = await on({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    try {
      const parent = (flags: TraceFlags) =>
        trace.setSpanContext(ROOT_CONTEXT, {
          traceId: 'a'.repeat(32),
          spanId: 'b'.repeat(16),
          traceFlags: flags,
          isRemote: true,
        });
      const sampled = startRequestSpan('HTTP', { kind: SpanKind.SERVER }, parent(TraceFlags.SAMPLED));
      assert.equal(sampled.isRecording(), true);
      assert.equal(sampled.spanContext().traceId, 'a'.repeat(32));
      sampled.end();
      const dropped = startRequestSpan('HTTP', { kind: SpanKind.SERVER }, parent(TraceFlags.NONE));
      assert.equal(dropped.isRecording(), false);
      assert.equal(dropped.spanContext().traceId, 'a'.repeat(32));
      assert.notEqual(dropped.spanContext().spanId, 'b'.repeat(16), 'a span id of its own');
      // No parent: the ratio 0 root leaves it out.
      assert.equal(startRequestSpan('HTTP', { kind: SpanKind.SERVER }, ROOT_CONTEXT).isRecording(), false);
    } finally {
      await h.stop();
    }
  });
});

describe('startRequestTrace: no span, SDK or API object for a request the sampler leaves out', () => {
  async function on(env: Record<string, string>) {
    const server = createServer((r, res) => {
      r.resume();
      r.on('end', () => res.end('{}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const h = startTelemetry('unit', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, ...env });
    return {
      stop: async () => {
        await h.shutdown();
        server.close();
      },
    };
  }

  it("ratioKeeps is the SDK's TraceIdRatioBasedSampler's rule, on the id's bytes", () => {
    for (const ratio of [0, 1e-6, 0.1, 0.5, 0.9, 0.999999, 1]) {
      const sdkSampler = new TraceIdRatioBasedSampler(ratio);
      const bound = rootUpperBound('parentbased_traceidratio', ratio);
      for (let i = 0; i < 2000; i++) {
        const bytes = randomBytes(16);
        // Words with the top bit set and small XORs: where signed/unsigned slips would show.
        if (i % 4 === 0) bytes.fill(0xff, 0, 4);
        if (i % 4 === 1) bytes.copy(bytes, 4, 0, 4);
        const id = bytes.toString('hex');
        if (id === '0'.repeat(32)) continue;
        const sdk =
          sdkSampler.shouldSample(ROOT_CONTEXT, id).decision === SamplingDecision.RECORD_AND_SAMPLED;
        assert.equal(ratioKeeps(bytes, 0, bound), sdk, `${ratio} ${id}`);
      }
    }
    assert.equal(rootUpperBound('always_on', 0), 2 ** 32);
    assert.equal(rootUpperBound('parentbased_always_off', 1), 0);
  });

  it('decides as the SDK would for the trace id it draws; a kept request is the SDK span with that id', async () => {
    const h = await on({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.3' });
    try {
      const sdkSampler = new TraceIdRatioBasedSampler(0.3);
      let kept = 0;
      const ids = new Set<string>();
      for (let i = 0; i < 600; i++) {
        const t = startRequestTrace({}, 'HTTP', { kind: SpanKind.SERVER });
        assert.ok(t instanceof RequestTraceContext);
        assert.match(t.traceId, /^[0-9a-f]{32}$/);
        assert.match(t.spanId, /^[0-9a-f]{16}$/);
        ids.add(t.traceId);
        const sdk =
          sdkSampler.shouldSample(ROOT_CONTEXT, t.traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
        assert.equal(t.sampled, sdk, t.traceId);
        const span = t.recordingSpan;
        if (sdk) {
          kept++;
          assert.equal(span?.isRecording(), true);
          assert.equal(span?.spanContext().traceId, t.traceId);
          assert.equal(span?.spanContext().spanId, t.spanId);
          assert.equal(
            context.with(t, () => inSampledTrace()),
            true,
          );
          span?.end();
          assert.equal(
            context.with(t, () => inSampledTrace()),
            false,
            'no child spans once it has ended',
          );
        } else {
          assert.equal(span, undefined, 'no span made for a request left out');
          // Asked for (the API, an instrumentation): a non-recording span of the same ids, made once.
          const s = trace.getSpan(t);
          assert.equal(s?.isRecording(), false);
          assert.deepEqual(
            { ...s?.spanContext() },
            { traceId: t.traceId, spanId: t.spanId, traceFlags: TraceFlags.NONE, traceState: undefined },
          );
          assert.equal(trace.getSpan(t), s);
        }
      }
      assert.equal(ids.size, 600);
      assert.ok(kept > 120 && kept < 240, `about 30 % kept: ${kept}`);
    } finally {
      await h.stop();
    }
  });

  it('inside a request left out: log lines, NATS traceparent (flags 00, one encoding) and inSampledTrace from its fields', async () => {
    const h = await on({ OTEL_TRACES_SAMPLER: 'always_off' });
    try {
      const t = startRequestTrace({}, 'HTTP', { kind: SpanKind.SERVER });
      assert.equal(t.sampled, false);
      await context.with(t, async () => {
        assert.equal(currentTraceId(), t.traceId);
        assert.equal(inSampledTrace(), false);
        const opts = rpcPublishOptions('s', 'inbox.3', req, Promise.resolve(END));
        assert.ok(opts.headers instanceof TraceparentHeaders, 'no MsgHdrs built');
        assert.equal(opts.headers.get('traceparent'), `00-${t.traceId}-${t.spanId}-00`);
      });
      // An incoming traceparent with a tracestate: continued through the SDK's sampler, the state kept.
      const c = startRequestTrace(
        { traceparent: `00-${'4'.repeat(32)}-${'5'.repeat(16)}-00`, tracestate: 'v=1' },
        'HTTP',
        { kind: SpanKind.SERVER },
      );
      assert.equal(c.traceId, '4'.repeat(32));
      assert.notEqual(c.spanId, '5'.repeat(16));
      await context.with(c, async () => {
        const opts = rpcPublishOptions('s', 'inbox.4', req, Promise.resolve(END));
        assert.equal(opts.headers?.get('traceparent'), `00-${'4'.repeat(32)}-${c.spanId}-00`);
        assert.equal(opts.headers?.get('tracestate'), 'v=1');
      });
    } finally {
      await h.stop();
    }
  });
});
