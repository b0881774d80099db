import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  ApiError,
  type CatalogEntry,
  decodeEmbeddingBase64,
  type EmbeddingList,
  EmbeddingListSchema,
  type ServiceRequest,
} from '@infer/contracts';
import { connectNats, type NatsConnection, RpcClient } from '@infer/rpc';
import { type EmbeddingService, startEmbeddingService } from '../app.js';
import { FRAME_BUDGET_BYTES } from '../frames.js';
import { catalogEntry, cosine } from '../testing/catalog.js';
import { startFakeUpstream } from '../testing/fake-upstream.js';
import { countTokens } from '../tokens.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const dec = new TextDecoder();

const lexical = (over: Record<string, unknown> = {}) =>
  catalogEntry({ id: 'embed-test', dimensions: 4096, engine: { type: 'lexical-hash' }, ...over });

const envelope = (model: CatalogEntry, body: unknown, opts: { stream?: boolean; deadlineMs?: number } = {}) =>
  ({
    requestId: randomUUID(),
    memberId: 'm',
    keyId: 'k',
    model,
    body,
    deadline: Date.now() + (opts.deadlineMs ?? 10_000),
    stream: opts.stream ?? false,
  }) satisfies ServiceRequest;

describe('embeddings handler over NATS', () => {
  let svc: EmbeddingService;
  let nc: NatsConnection;
  let client: RpcClient;

  before(async () => {
    svc = await startEmbeddingService({
      env: { NATS_URL, LOG_LEVEL: 'silent' },
      subjectPrefix: `test.${randomUUID()}.`,
    });
    nc = await connectNats(NATS_URL, 'embeddings-handler-spec');
    client = new RpcClient(nc);
  });
  after(async () => {
    await nc?.close();
    await svc?.stop();
  });

  const call = async (model: CatalogEntry, body: unknown) => {
    const end = await client.call(svc.subjects.embeddings, envelope(model, body), { idleTimeoutMs: 10_000 });
    return { end, list: EmbeddingListSchema.parse(end.data) as EmbeddingList };
  };
  /** The streamed form, as the gateway asks for it: list frames then the rest of the list. */
  const stream = async (model: CatalogEntry, body: unknown) => {
    const st = client.stream(svc.subjects.embeddings, envelope(model, body, { stream: true }), {
      idleTimeoutMs: 10_000,
    });
    const frames: unknown[][] = [];
    const sizes: number[] = [];
    for await (const raw of st) {
      sizes.push(raw.length);
      frames.push(JSON.parse(dec.decode(raw)));
    }
    return { frames, sizes, end: await st.end };
  };
  const failure = async (model: CatalogEntry, body: unknown) => {
    try {
      await call(model, body);
    } catch (e) {
      if (e instanceof ApiError) return e;
      throw e;
    }
    throw new Error('expected a failure');
  };

  it('answers an EmbeddingList in input order with exact usage', async () => {
    const texts = ['first', 'the second text', 'third: with punctuation!'];
    const { end, list } = await call(lexical(), { model: 'embed-test', input: texts });
    assert.equal(list.object, 'list');
    assert.equal(list.model, 'embed-test');
    assert.deepEqual(
      list.data.map((d) => d.index),
      [0, 1, 2],
    );
    const tokens = texts.reduce((s, t) => s + countTokens(t), 0);
    assert.deepEqual(list.usage, { prompt_tokens: tokens, total_tokens: tokens });
    assert.deepEqual(end.usage, { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens });
    const single = await call(lexical(), { model: 'embed-test', input: 'the second text' });
    assert.equal(single.list.data.length, 1);
    assert.deepEqual(single.list.data[0]?.embedding, list.data[1]?.embedding, 'same text, same vector');
  });

  it('encodes base64 as little-endian float32 equal to the float output', async () => {
    const body = { model: 'embed-test', input: ['alpha beta', 'gamma'] };
    const f = await call(lexical(), { ...body, encoding_format: 'float' });
    const b = await call(lexical(), { ...body, encoding_format: 'base64' });
    assert.equal(typeof b.list.data[0]?.embedding, 'string');
    b.list.data.forEach((d, i) => {
      assert.deepEqual(decodeEmbeddingBase64(d.embedding as string), f.list.data[i]?.embedding);
    });
  });

  it('shortens vectors to `dimensions`, normalised again; more than the model has is a 400', async () => {
    const { list } = await call(lexical(), {
      model: 'embed-test',
      input: 'some words here',
      dimensions: 256,
    });
    const v = list.data[0]?.embedding as number[];
    assert.equal(v.length, 256);
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-6 || norm === 0);
    const e = await failure(lexical(), { model: 'embed-test', input: 'x', dimensions: 5000 });
    assert.equal(e.status, 400);
    assert.equal(e.param, 'dimensions');
  });

  it('refuses an input over the token limit, naming it', async () => {
    const m = lexical({ context_window: 10 });
    const many = await failure(m, {
      model: 'embed-test',
      input: ['short', 'also short', 'one two three four five six seven eight nine ten eleven'],
    });
    assert.equal(many.status, 400);
    assert.equal(many.param, 'input[2]');
    assert.match(many.message, /11 tokens.*10 tokens/);
    const one = await failure(m, {
      model: 'embed-test',
      input: 'one two three four five six seven eight nine ten eleven',
    });
    assert.equal(one.param, 'input');
  });

  it('re-validates the body: empty strings and arrays are 400 with param', async () => {
    assert.equal((await failure(lexical(), { model: 'embed-test', input: ['ok', ''] })).param, 'input[1]');
    assert.equal((await failure(lexical(), { model: 'embed-test', input: [] })).param, 'input');
  });

  it('streams a long list in frames under the budget that join into the same list', async () => {
    const texts = Array.from({ length: 300 }, (_, i) => `document number ${i} about topic ${i % 7}`);
    const body = { model: 'embed-test', input: texts, encoding_format: 'float' };
    const { frames, sizes, end } = await stream(lexical(), body);
    assert.ok(frames.length > 1, `several frames, got ${frames.length}`);
    for (const s of sizes) assert.ok(s <= FRAME_BUDGET_BYTES, `frame of ${s} bytes`);
    const rest = end.data as EmbeddingList;
    assert.deepEqual(rest.data, []);
    const joined = frames.flat() as EmbeddingList['data'];
    assert.deepEqual(
      joined.map((d) => d.index),
      texts.map((_, i) => i),
    );
    // The same vectors as unary calls (a unary reply must fit one NATS message: a few texts at a time).
    const unary = await call(lexical(), { ...body, input: texts.slice(0, 20) });
    assert.deepEqual(joined.slice(0, 20), unary.list.data);
    assert.equal(
      rest.usage.prompt_tokens,
      texts.reduce((s, t) => s + countTokens(t), 0),
    );
  });

  it('merges concurrent requests in one batch and gives each its own vectors and usage', async () => {
    const m = lexical({ engine: { type: 'lexical-hash', batch: { max_wait_ms: 30, max_items: 1000 } } });
    const bodies = [['apples', 'pears'], ['red car'], ['blue sky', 'green grass', 'yellow sun']];
    const results = await Promise.all(bodies.map((input) => call(m, { model: 'embed-test', input })));
    results.forEach((r, i) => {
      const input = bodies[i] as string[];
      assert.equal(r.list.data.length, input.length);
      assert.equal(
        r.list.usage.prompt_tokens,
        input.reduce((s, t) => s + countTokens(t), 0),
      );
    });
    const alone = await call(m, { model: 'embed-test', input: 'red car' });
    assert.deepEqual(results[1]?.list.data[0]?.embedding, alone.list.data[0]?.embedding);
    const apples = results[0]?.list.data[0]?.embedding as number[];
    assert.ok(cosine(apples, alone.list.data[0]?.embedding as number[]) < 0.3);
  });

  it('answers a deadline with 524 and a misconfigured model with a 500 without internals', async () => {
    const up = await startFakeUpstream({ dimensions: 8 });
    up.failWith('hang');
    const slow = catalogEntry({ id: 'slow', dimensions: 8, engine: { type: 'tei', base_url: up.url } });
    const late = await client
      .call(svc.subjects.embeddings, envelope(slow, { model: 'slow', input: 'x' }, { deadlineMs: 150 }), {
        idleTimeoutMs: 10_000,
      })
      .then(
        () => null,
        (e: unknown) => e as ApiError,
      );
    await up.close();
    assert.equal(late?.status, 524);

    const bad = await failure(
      catalogEntry({ id: 'bad', dimensions: 8, engine: { type: 'lexical-hash', seed: -1 } }),
      {
        model: 'bad',
        input: 'x',
      },
    );
    assert.equal(bad.status, 500);
    assert.match(bad.message, /'bad' cannot be served/);
    assert.doesNotMatch(bad.message, /seed/);
    const unknown = await failure(catalogEntry({ id: 'nope', engine: { type: 'no-such-engine' } }), {
      model: 'nope',
      input: 'x',
    });
    assert.equal(unknown.status, 500);
  });
});
