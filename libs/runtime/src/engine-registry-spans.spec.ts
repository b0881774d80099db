import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CatalogEntry } from '@infer/contracts';
import {
  activeTracer,
  createLogger,
  GEN_AI_OPERATION,
  startTelemetry,
  type TelemetryHandle,
  traceEngine,
} from '@infer/telemetry';
import { context, ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { type OtlpReceiver, startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { EngineRegistry } from './engine-registry.js';

/** A test engine: a promise method, a stream method (deltas ending in `finish`), and one left untraced. */
class FakeEngine {
  readonly type = 'fake';
  calls = 0;
  async embed(texts: string[]): Promise<{ vectors: number[][]; tokens: number[] }> {
    this.calls++;
    await new Promise((r) => setImmediate(r));
    return { vectors: texts.map(() => [1]), tokens: texts.map((t) => t.length) };
  }
  async *generate(
    text: string,
  ): AsyncIterable<{ type: string; text?: string; reason?: string; usage?: unknown }> {
    this.calls++;
    for (const w of text.split(' ')) {
      await new Promise((r) => setImmediate(r));
      yield { type: 'content', text: w };
    }
    yield {
      type: 'finish',
      reason: 'stop',
      usage: { prompt_tokens: 5, completion_tokens: 2, reasoning_tokens: 0 },
    };
  }
  async fail(): Promise<never> {
    throw Object.assign(new Error('engine down'), { code: 'engine_unavailable' });
  }
  count(): number {
    return 1;
  }
  async close(): Promise<void> {}
}

const model = { id: 'm-1', engine: { type: 'fake' } } as unknown as CatalogEntry;

describe('traceEngine, tracing off', () => {
  it('returns the engine untouched: its methods are the class methods', () => {
    assert.equal(activeTracer, null);
    const e = new FakeEngine();
    assert.equal(traceEngine(e, { type: 'fake', model: 'm' }, { embed: 'embeddings' }), e);
    assert.equal(e.embed, FakeEngine.prototype.embed);
    assert.equal(Object.hasOwn(e, 'embed'), false);
  });
});

describe('traceEngine, tracing on', () => {
  let otlp: OtlpReceiver;
  let h: TelemetryHandle;
  before(async () => {
    otlp = await startOtlpReceiver();
    h = startTelemetry('engine-spans', { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url });
  });
  after(async () => {
    await h.shutdown();
    await otlp.close();
  });

  /** Runs fn inside a sampled root span; returns the root's ids once its spans are exported. */
  async function inRoot(
    fn: () => Promise<void>,
    sampled = true,
  ): Promise<{ traceId: string; spanId: string }> {
    const tracer = activeTracer;
    assert.ok(tracer);
    const root = sampled
      ? tracer.startSpan('root')
      : trace.wrapSpanContext({
          traceId: 'a'.repeat(32),
          spanId: 'b'.repeat(16),
          traceFlags: TraceFlags.NONE,
        });
    await context.with(trace.setSpan(ROOT_CONTEXT, root), fn);
    root.end();
    await h.flush();
    return { traceId: root.spanContext().traceId, spanId: root.spanContext().spanId };
  }

  it('a registry with `spans` gives each engine call a GenAI span, child of the active span, with usage', async () => {
    const reg = new EngineRegistry<FakeEngine>(
      createLogger('t', 'silent'),
      [{ type: 'fake', create: () => new FakeEngine() }],
      { spans: { embed: 'embeddings', generate: 'chat', fail: 'embeddings' } },
    );
    const engine = reg.get(model);
    const ids = await inRoot(async () => {
      await engine.embed(['abc', 'de']);
      const deltas = [];
      for await (const d of engine.generate('one two three')) deltas.push(d);
      assert.equal(deltas.length, 4);
      await assert.rejects(engine.fail(), /engine down/);
      assert.equal(engine.count(), 1);
    });
    const spans = otlp.spans.filter((s) => s.traceId === ids.traceId && s.spanId !== ids.spanId);
    assert.equal(spans.length, 3, spans.map((s) => s.name).join(', '));
    for (const s of spans) {
      assert.equal(s.parentSpanId, ids.spanId, `${s.name} is a child of the active span`);
      assert.equal(s.kind, 1, 'INTERNAL');
      assert.equal(s.attributes['gen_ai.request.model'], 'm-1');
      assert.equal(s.attributes['gen_ai.provider.name'], 'fake');
      assert.equal(s.attributes['infer.engine.type'], 'fake');
    }
    const embed = spans.find((s) => s.attributes['infer.engine.method'] === 'embed');
    assert.equal(embed?.name, 'embeddings m-1');
    assert.equal(embed?.attributes['gen_ai.operation.name'], 'embeddings');
    assert.equal(embed?.attributes['gen_ai.usage.input_tokens'], 5);
    const gen = spans.find((s) => s.attributes['infer.engine.method'] === 'generate');
    assert.equal(gen?.name, 'chat m-1');
    assert.equal(gen?.attributes['gen_ai.usage.input_tokens'], 5);
    assert.equal(gen?.attributes['gen_ai.usage.output_tokens'], 2);
    assert.equal(typeof gen?.attributes['gen_ai.response.time_to_first_chunk'], 'number');
    const failed = spans.find((s) => s.attributes['infer.engine.method'] === 'fail');
    assert.equal(failed?.status, 2, 'ERROR status');
    assert.equal(failed?.attributes['error.type'], 'engine_unavailable');
  });

  it("the engine's own work runs in its span (a span it starts is the engine span's child), also inside a stream", async () => {
    const tracer = activeTracer;
    assert.ok(tracer);
    const inner = {
      type: 'x',
      async call(): Promise<void> {
        tracer.startSpan('inner-call').end();
      },
      async *stream(): AsyncIterable<number> {
        await new Promise((r) => setImmediate(r));
        tracer.startSpan('inner-stream').end();
        yield 1;
      },
    };
    traceEngine(inner, { type: 'x', model: 'm-2' }, { call: 'embeddings', stream: 'chat' });
    const ids = await inRoot(async () => {
      await inner.call();
      for await (const _ of inner.stream()) {
        // drain
      }
    });
    const spans = otlp.spans.filter((s) => s.traceId === ids.traceId);
    const byName = new Map(spans.map((s) => [s.name, s]));
    assert.equal(byName.get('inner-call')?.parentSpanId, byName.get('embeddings m-2')?.spanId);
    assert.equal(byName.get('inner-stream')?.parentSpanId, byName.get('chat m-2')?.spanId);
  });

  it('the operation named by the handler span wins over the registry default; an early return ends the span', async () => {
    const e = traceEngine(new FakeEngine(), { type: 'fake', model: 'm-3' }, { generate: 'chat' });
    const ids = await inRoot(async () => {
      await context.with(context.active().setValue(GEN_AI_OPERATION, 'text_completion'), async () => {
        for await (const _ of e.generate('a b c d')) break;
      });
    });
    const s = otlp.spans.find((x) => x.traceId === ids.traceId && x.name === 'text_completion m-3');
    assert.ok(s, 'span named for the operation in the context, ended by the early return');
    assert.equal(s.attributes['gen_ai.operation.name'], 'text_completion');
  });

  it('outside a trace, or in one the sampler left out, calls go straight through: no span', async () => {
    const e = traceEngine(new FakeEngine(), { type: 'fake', model: 'm-4' }, { embed: 'embeddings' });
    const before = otlp.spans.length;
    await e.embed(['x']);
    await inRoot(async () => {
      await e.embed(['y']);
    }, false);
    assert.equal(e.calls, 2);
    assert.equal(otlp.spans.filter((s) => s.name === 'embeddings m-4').length, 0);
    assert.equal(otlp.spans.length, before);
  });

  it('wraps an engine once, however often it is given', () => {
    const e = new FakeEngine();
    traceEngine(e, { type: 'fake', model: 'm' }, { embed: 'embeddings' });
    const wrapped = e.embed;
    traceEngine(e, { type: 'fake', model: 'm' }, { embed: 'embeddings' });
    assert.equal(e.embed, wrapped);
    assert.notEqual(wrapped, FakeEngine.prototype.embed);
  });
});
