/**
 * OpenTelemetry across every hop: the real apps (gateway, chat, embedding, audio and image services,
 * their BullMQ workers) export OTLP/HTTP to an in-process receiver; each request through the official
 * openai SDK must come back as ONE connected trace: gateway SERVER span -> limits admission -> NATS
 * send (CLIENT) -> service handler (SERVER) -> GenAI span with gen_ai.* attributes -> (jobs) the
 * BullMQ worker's CONSUMER span; upstream engines add HTTP client spans.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { toFile } from 'openai';
import { parse, stringify } from 'yaml';
import { startAudioService } from '../../apps/audio-service/src/app.js';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import {
  type FakeUpstream,
  startFakeUpstream,
} from '../../apps/embedding-service/src/testing/fake-upstream.js';
import { type ImageService, startImageService } from '../../apps/image-service/src/app.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { type Stack, startStack } from './harness.js';

const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

/** The service handler's GenAI span (traceRpcHandler): the request's model work as a whole. */
const isHandlerGenAi = (s: ReceivedSpan, op: string) =>
  s.attributes['gen_ai.operation.name'] === op && s.attributes['infer.engine.type'] === undefined;
/** The engine call's span (traceEngine, applied by the engine registries). */
const isEngineSpan = (s: ReceivedSpan, op: string) =>
  s.kind === INTERNAL &&
  s.attributes['gen_ai.operation.name'] === op &&
  s.attributes['infer.engine.type'] !== undefined;

async function until<T>(what: string, fn: () => T | undefined, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('telemetry: one connected trace per request, across every hop', () => {
  let otlp: OtlpReceiver;
  let stack: Stack;
  let up: FakeUpstream;
  let image: ImageService | undefined;
  const id = randomBytes(4).toString('hex');
  const BULLMQ_PREFIX = `test-otel-${id}`;
  const dir = mkdtempSync(join(tmpdir(), 'infer-otel-'));

  before(async () => {
    otlp = await startOtlpReceiver();
    up = await startFakeUpstream({ dimensions: 32, maxBatch: 32 });
    const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as { models: unknown[] };
    catalog.models.push({
      tiers: ['community', 'inference', 'premium'],
      id: 'embed-tei',
      kind: 'embedding',
      rank: 202,
      dimensions: 32,
      engine: { type: 'tei', base_url: up.url },
    });
    const catalogFile = join(dir, 'models.yaml');
    writeFileSync(catalogFile, stringify(catalog));
    stack = await startStack({
      catalogFile,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        // Spans reach the receiver within a fifth of a second (production: OpenTelemetry's default 5 s).
        OTEL_BSP_SCHEDULE_DELAY: '200',
        LIMITS_ENABLED: '1',
        BULLMQ_PREFIX,
        IMAGE_STORE_REDIS_PREFIX: `test:otel:${id}:`,
      },
      services: [
        (env) => startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
        (env) => startAudioService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
        async (env) => {
          image = await startImageService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX });
          return image;
        },
      ],
    });
  });

  after(async () => {
    await image?.queue.obliterate({ force: true }).catch(() => undefined);
    await stack?.close();
    await up?.close();
    await otlp?.close();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    for await (const keys of redis.scanStream({ match: `${BULLMQ_PREFIX}:*`, count: 500 }) as AsyncIterable<
      string[]
    >) {
      if (keys.length) await redis.del(...keys);
    }
    for await (const keys of redis.scanStream({ match: `test:otel:${id}:*`, count: 500 }) as AsyncIterable<
      string[]
    >) {
      if (keys.length) await redis.del(...keys);
    }
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Waits for the trace's spans (gateway span ended, GenAI span and, for jobs, the worker's span in),
   * then checks it is one tree rooted at the gateway's span and returns its spans.
   */
  async function traceOf(
    traceId: string,
    route: string,
    op: string,
    opts: { job?: boolean; parentSpanId?: string } = {},
  ): Promise<ReceivedSpan[]> {
    const spans = await until(`the spans of ${route}`, () => {
      const s = otlp.spans.filter((x) => x.traceId === traceId);
      const gw = s.find((x) => x.kind === SERVER && x.attributes['http.route'] === route);
      const gen = s.find((x) => isHandlerGenAi(x, op));
      const engine = s.find((x) => isEngineSpan(x, op));
      const job = !opts.job || s.some((x) => x.kind === CONSUMER);
      return gw && gen && engine && job ? s : undefined;
    });
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const roots = spans.filter((s) => !byId.has(s.parentSpanId));
    assert.equal(roots.length, 1, `one root: ${roots.map((r) => r.name).join(', ')}`);
    const root = roots[0] as ReceivedSpan;
    assert.equal(root.kind, SERVER);
    assert.equal(root.attributes['http.route'], route);
    assert.equal(root.parentSpanId, opts.parentSpanId ?? '');
    assert.equal(root.attributes['http.response.status_code'], 200);
    assert.match(String(root.attributes['infer.key_id']), /.+/);
    assert.match(String(root.attributes['infer.member_id']), /.+/);
    for (const s of spans) {
      for (const v of Object.values(s.attributes)) {
        assert.doesNotMatch(String(v), /sk-|^Bearer /, `no API key in span ${s.name}`);
      }
    }
    const ancestors = (s: ReceivedSpan): string[] => {
      const out: string[] = [];
      for (let p = byId.get(s.parentSpanId); p; p = byId.get(p.parentSpanId)) out.push(p.name);
      return out;
    };
    // gateway -> limits admission
    const admit = spans.find((s) => s.name === 'limits.admit');
    assert.ok(admit, 'a limits admission span');
    assert.equal(admit.parentSpanId, root.spanId);
    // gateway -> NATS send -> service handler -> GenAI span
    const send = spans.find((s) => s.kind === CLIENT && s.attributes['messaging.system'] === 'nats');
    assert.ok(send, 'a NATS send span');
    const handler = spans.find((s) => s.kind === SERVER && s.attributes['messaging.system'] === 'nats');
    assert.ok(handler, 'a service handler span');
    assert.equal(handler.parentSpanId, send.spanId, 'the handler continues the NATS send span');
    assert.ok(ancestors(send).includes(root.name));
    const gen = spans.find((s) => isHandlerGenAi(s, op)) as ReceivedSpan;
    assert.equal(gen.parentSpanId, handler.spanId);
    assert.equal(typeof gen.attributes['gen_ai.request.model'], 'string');
    assert.equal(typeof gen.attributes['gen_ai.usage.input_tokens'], 'number');
    assert.equal(typeof gen.attributes['gen_ai.usage.output_tokens'], 'number');
    if (opts.job) {
      const consumers = spans.filter((s) => s.kind === CONSUMER);
      for (const c of consumers) {
        assert.equal(c.attributes['messaging.system'], 'bullmq');
        assert.ok(ancestors(c).includes(gen.name), `the worker span ${c.name} sits under the GenAI span`);
      }
    }
    // The engine call: a GenAI span of its own (made by the engine registry), a child of the span of
    // the code that called the engine: the service handler's GenAI span, or for a job the worker's
    // CONSUMER span; either way inside the service handler's span.
    const engines = spans.filter((s) => isEngineSpan(s, op));
    assert.equal(engines.length, 1, `one engine span: ${engines.map((e) => e.name).join(', ')}`);
    const engine = engines[0] as ReceivedSpan;
    const caller = byId.get(engine.parentSpanId);
    assert.ok(caller, 'the engine span has its parent in the trace');
    if (opts.job) {
      assert.equal(
        caller.kind,
        CONSUMER,
        `the engine span's parent is the worker's span, not ${caller.name}`,
      );
    } else {
      assert.equal(
        caller.spanId,
        gen.spanId,
        `the engine span's parent is the handler's span, not ${caller.name}`,
      );
    }
    assert.ok(ancestors(engine).includes(handler.name), 'the engine span is inside the service handler span');
    assert.equal(engine.name, `${op} ${gen.attributes['gen_ai.request.model']}`);
    assert.equal(engine.attributes['gen_ai.request.model'], gen.attributes['gen_ai.request.model']);
    assert.match(String(engine.attributes['infer.engine.type']), /^[a-z][a-z0-9_.-]*$/);
    assert.equal(engine.attributes['gen_ai.provider.name'], engine.attributes['infer.engine.type']);
    assert.equal(engine.status, 0, 'the engine call did not fail');
    return spans;
  }

  it('a chat stream: gateway, limits, NATS, chat-service, GenAI span with tokens and time to first chunk', async () => {
    const { data, response } = await stack
      .client('premium')
      .chat.completions.create({
        model: 'chat-G',
        messages: [{ role: 'user', content: 'Say hello in five words.' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    const traceId = response.headers.get('x-trace-id');
    assert.match(traceId ?? '', /^[0-9a-f]{32}$/);
    let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
    for await (const chunk of data) if (chunk.usage) usage = chunk.usage;
    assert.ok(usage);
    const spans = await traceOf(traceId as string, '/v1/chat/completions', 'chat');
    const gen = spans.find((s) => s.attributes['gen_ai.operation.name'] === 'chat') as ReceivedSpan;
    assert.equal(gen.attributes['gen_ai.request.model'], 'chat-G');
    assert.equal(gen.attributes['gen_ai.usage.input_tokens'], usage.prompt_tokens);
    assert.equal(gen.attributes['gen_ai.usage.output_tokens'], usage.completion_tokens);
    assert.equal(typeof gen.attributes['gen_ai.response.time_to_first_chunk'], 'number');
    const engine = spans.find((s) => isEngineSpan(s, 'chat')) as ReceivedSpan;
    assert.equal(engine.name, 'chat chat-G');
    assert.equal(engine.attributes['infer.engine.method'], 'generate');
    assert.equal(engine.attributes['gen_ai.usage.output_tokens'], usage.completion_tokens);
    assert.equal(typeof engine.attributes['gen_ai.response.time_to_first_chunk'], 'number');
  });

  it('an embedding call to an upstream engine continues the caller traceparent and has an HTTP client span', async () => {
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const { response } = await stack
      .client('community')
      .embeddings.create(
        { model: 'embed-tei', input: ['tracing one', 'tracing two'] },
        { headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` } },
      )
      .withResponse();
    assert.equal(response.headers.get('x-trace-id'), callerTrace);
    const spans = await traceOf(callerTrace, '/v1/embeddings', 'embeddings', { parentSpanId: callerSpan });
    const gen = spans.find((s) => isHandlerGenAi(s, 'embeddings')) as ReceivedSpan;
    assert.equal(gen.attributes['gen_ai.request.model'], 'embed-tei');
    const engine = spans.find((s) => isEngineSpan(s, 'embeddings')) as ReceivedSpan;
    assert.equal(engine.attributes['infer.engine.type'], 'tei');
    assert.ok((gen.attributes['gen_ai.usage.input_tokens'] as number) > 0);
    const http = await until('the upstream HTTP client span', () =>
      otlp.spans.find(
        (s) =>
          s.traceId === callerTrace && s.kind === CLIENT && s.attributes['http.request.method'] === 'POST',
      ),
    );
    assert.ok(String(http.attributes['url.full']).startsWith(up.url));
    assert.equal(http.parentSpanId, engine.spanId, "the upstream call is a child of the engine's span");
  });

  it('an embedding call to an embedded engine (glove-sif): its engine span sits under the handler span', async () => {
    const { response } = await stack
      .client('community')
      .embeddings.create({ model: 'embed-model', input: 'tracing an embedded engine' })
      .withResponse();
    const traceId = response.headers.get('x-trace-id') as string;
    const spans = await traceOf(traceId, '/v1/embeddings', 'embeddings');
    const engine = spans.find((s) => isEngineSpan(s, 'embeddings')) as ReceivedSpan;
    assert.equal(engine.name, 'embeddings embed-model');
    assert.equal(engine.attributes['infer.engine.type'], 'glove-sif');
    assert.equal(engine.attributes['infer.engine.method'], 'embed');
  });

  it('a transcription job: the BullMQ worker spans join the request trace', async () => {
    const speech = await stack.client('community').audio.speech.create({
      model: 'tts-model',
      input: 'The quick brown fox.',
      voice: 'en-female',
      response_format: 'wav',
    });
    const wav = Buffer.from(await speech.arrayBuffer());
    const { response } = await stack
      .client('community')
      .audio.transcriptions.create({ file: await toFile(wav, 'speech.wav'), model: 'stt-model' })
      .withResponse();
    const traceId = response.headers.get('x-trace-id') as string;
    await traceOf(traceId, '/v1/audio/transcriptions', 'transcription', { job: true });
  });

  it('an image job: the BullMQ worker span joins the request trace', async () => {
    const { response } = await stack
      .client('premium')
      .images.generate({ model: 'image-model', prompt: 'a red square', size: '256x256' })
      .withResponse();
    const traceId = response.headers.get('x-trace-id') as string;
    await traceOf(traceId, '/v1/images/generations', 'image_generation', { job: true });
  });

  it('the receiver got only valid OTLP JSON exports', () => {
    assert.equal(otlp.rejected, 0);
    assert.ok(otlp.spans.length > 0);
  });
});
