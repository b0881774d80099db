/**
 * Embeddings and rerank through the gateway: the official `openai` SDK for /v1/embeddings, raw fetch
 * for /v1/rerank and /v2/rerank (the SDK has no rerank). The default catalog serves embed-model with
 * glove-sif (GloVe-SIF semantic vectors) and rerank with hybrid (BM25 + GloVe-SIF); extra catalog entries put the other engines behind the gateway:
 * embedded llama.cpp on tiny GGUFs the test writes, and TEI / OpenAI-compatible upstreams played by a
 * fake upstream server (a test double) on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EmbeddingListSchema, RerankResponseSchema } from '@infer/contracts';
import { Agent, fetch as undiciFetch } from 'undici';
import { parse, stringify } from 'yaml';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import {
  type FakeUpstream,
  startFakeUpstream,
} from '../../apps/embedding-service/src/testing/fake-upstream.js';
import {
  tinyBertRerankerGguf,
  tinyLlamaEmbeddingGguf,
  writeModel,
} from '../../apps/embedding-service/src/testing/tiny-models.js';
import { countTokens } from '../../apps/embedding-service/src/tokens.js';
import { apiError, type Stack, startStack } from './harness.js';

const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * (b[i] as number), 0);

describe('embeddings and rerank through the gateway', () => {
  let stack: Stack;
  let dir: string;
  let up: FakeUpstream;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'embeddings-it-'));
    up = await startFakeUpstream({ dimensions: 32, maxBatch: 32 });
    const embedGguf = writeModel(join(dir, 'embed.gguf'), tinyLlamaEmbeddingGguf());
    const rankGguf = writeModel(join(dir, 'rank.gguf'), tinyBertRerankerGguf());
    const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as { models: unknown[] };
    const base = { tiers: ['community', 'inference', 'premium'] };
    catalog.models.push(
      {
        ...base,
        id: 'embed-llama',
        kind: 'embedding',
        rank: 200,
        dimensions: 64,
        engine: { type: 'llama-cpp-embedding', gguf: embedGguf, threads: 1 },
      },
      {
        ...base,
        id: 'rerank-llama',
        kind: 'rerank',
        rank: 201,
        engine: { type: 'llama-cpp-rerank', gguf: rankGguf, threads: 1 },
      },
      {
        ...base,
        id: 'embed-tei',
        kind: 'embedding',
        rank: 202,
        dimensions: 32,
        engine: { type: 'tei', base_url: up.url },
      },
      { ...base, id: 'rerank-tei', kind: 'rerank', rank: 203, engine: { type: 'tei', base_url: up.url } },
      {
        ...base,
        id: 'embed-openai',
        kind: 'embedding',
        rank: 204,
        dimensions: 32,
        engine: { type: 'openai', base_url: `${up.url}/v1`, timeout_ms: 60_000 },
      },
      {
        ...base,
        id: 'rerank-openai',
        kind: 'rerank',
        rank: 205,
        engine: { type: 'openai', base_url: `${up.url}/v1` },
      },
    );
    const catalogFile = join(dir, 'models.yaml');
    writeFileSync(catalogFile, stringify(catalog));
    stack = await startStack({
      catalogFile,
      // Limits have their own tests; these make more requests per minute than the spec's 60.
      env: { LIMITS_ENABLED: '0' },
      services: [(env) => startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX })],
    });
  });
  const cleanup: Array<() => Promise<void>> = [];
  after(async () => {
    for (const c of cleanup) await c();
    await stack?.close();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const post = (path: string, body: unknown, key = stack.keys.community) =>
    fetch(`${stack.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const rerank = async (body: unknown, path = '/v1/rerank') => {
    const res = await post(path, body);
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  describe('POST /v1/embeddings', () => {
    it('returns 4096-dimension vectors; the SDK base64 default decodes to the float output', async () => {
      const client = stack.client('community');
      const input = ['The quick brown fox', 'jumps over the lazy dog'];
      const viaBase64 = await client.embeddings.create({ model: 'embed-model', input });
      const viaFloat = await client.embeddings.create({
        model: 'embed-model',
        input,
        encoding_format: 'float',
      });
      EmbeddingListSchema.parse(viaFloat);
      assert.equal(viaFloat.object, 'list');
      assert.equal(viaFloat.model, 'embed-model');
      assert.equal(viaFloat.data[0]?.embedding.length, 4096);
      assert.deepEqual(
        viaBase64.data.map((d) => d.embedding),
        viaFloat.data.map((d) => d.embedding),
      );
      const tokens = input.reduce((s, t) => s + countTokens(t), 0);
      assert.deepEqual(viaFloat.usage, { prompt_tokens: tokens, total_tokens: tokens });

      const raw = await post('/v1/embeddings', {
        model: 'embed-model',
        input: 'hello',
        encoding_format: 'base64',
      });
      assert.equal(raw.status, 200);
      assert.match(raw.headers.get('content-type') ?? '', /application\/json/);
      const list = (await raw.json()) as { data: Array<{ embedding: unknown }> };
      assert.equal(typeof list.data[0]?.embedding, 'string', 'base64 on the wire when asked');
    });

    it('keeps the input order and indexes on a batch; similar texts are closer', async () => {
      const input = [
        'reset my password',
        'bananas are yellow',
        'how to reset a password',
        'reset my password',
      ];
      const res = await stack
        .client('inference')
        .embeddings.create({ model: 'embed-model', input, encoding_format: 'float' });
      assert.deepEqual(
        res.data.map((d) => d.index),
        [0, 1, 2, 3],
      );
      const [a, b, c, d] = res.data.map((x) => x.embedding) as [number[], number[], number[], number[]];
      assert.deepEqual(a, d);
      assert.ok(cos(a, c) > cos(a, b) + 0.2, `${cos(a, c)} vs ${cos(a, b)}`);
    });

    it('the default model is semantic: synonyms without a shared letter are close; odd input gets a unit vector', async () => {
      const input = [
        'car',
        'automobile',
        'banana',
        '\u{1F642}',
        '\u65e5\u672c\u8a9e',
        ' ',
        'word '.repeat(8000),
      ];
      const res = await stack
        .client('community')
        .embeddings.create({ model: 'embed-model', input, encoding_format: 'float' });
      const [car, automobile, banana, ...odd] = res.data.map((x) => x.embedding) as number[][];
      assert.ok(
        cos(car as number[], automobile as number[]) > cos(car as number[], banana as number[]) + 0.4,
        `${cos(car as number[], automobile as number[])} vs ${cos(car as number[], banana as number[])}`,
      );
      for (const v of odd) {
        assert.equal(v.length, 4096);
        assert.ok(v.every(Number.isFinite));
        assert.ok(Math.abs(cos(v, v) - 1) < 1e-4);
      }
      const tokens = input.reduce((n, t) => n + countTokens(t), 0);
      assert.deepEqual(res.usage, { prompt_tokens: tokens, total_tokens: tokens });
    });

    it('answers the largest request (2048 inputs) whose reply is far larger than one NATS message', async () => {
      const input = Array.from({ length: 2048 }, (_, i) => `text number ${i}`);
      const res = await stack.client('community').embeddings.create({ model: 'embed-model', input });
      assert.equal(res.data.length, 2048);
      assert.ok(res.data.every((d, i) => d.index === i && d.embedding.length === 4096));
      const one = await stack
        .client('community')
        .embeddings.create({ model: 'embed-model', input: 'text number 1234' });
      assert.deepEqual(res.data[1234]?.embedding, one.data[0]?.embedding);
    });

    it('gives concurrent requests (merged in batches) each their own answer', async () => {
      const client = stack.client('premium');
      const inputs = Array.from({ length: 12 }, (_, i) => [`request ${i} first`, `request ${i} second`]);
      const all = await Promise.all(
        inputs.map((input) =>
          client.embeddings.create({ model: 'embed-model', input, encoding_format: 'float' }),
        ),
      );
      const alone = await client.embeddings.create({
        model: 'embed-model',
        input: inputs[7] as string[],
        encoding_format: 'float',
      });
      assert.deepEqual(all[7]?.data, alone.data);
      assert.deepEqual(all[7]?.usage, alone.usage);
    });

    it('refuses bad input with 400 and the offending param', async () => {
      const client = stack.client('community');
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ model: 'embed-model' }, 'input'],
        [{ model: 'embed-model', input: '' }, 'input'],
        [{ model: 'embed-model', input: [] }, 'input'],
        [{ model: 'embed-model', input: ['ok', ''] }, 'input[1]'],
        [{ model: 'embed-model', input: 42 }, 'input'],
        [{ model: 'embed-model', input: Array.from({ length: 2049 }, () => 'x') }, 'input'],
        [{ model: 'embed-model', input: ['short', 'word '.repeat(8193)] }, 'input[1]'],
        [{ model: 'embed-model', input: 'word '.repeat(8193) }, 'input'],
        [{ model: 'embed-model', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
        [{ model: 'embed-model', input: 'x', dimensions: 0 }, 'dimensions'],
        [{ model: 'embed-model', input: 'x', dimensions: 5000 }, 'dimensions'],
        [{ model: 'chat-A', input: 'x' }, 'model'],
        [{ input: 'x' }, 'model'],
      ];
      for (const [body, param] of cases) {
        const err = await apiError(client.embeddings.create(body as never));
        assert.equal(err.status, 400, JSON.stringify(body).slice(0, 80));
        assert.equal(err.param, param, JSON.stringify(body).slice(0, 80));
        assert.equal(err.code, 'invalid_request_error');
        assert.equal(err.type, 'invalid_request_error');
      }
      const missing = await apiError(client.embeddings.create({ model: 'no-such-model', input: 'x' }));
      assert.equal(missing.status, 404);
      assert.equal(missing.code, 'model_not_found');
      const big = await post('/v1/embeddings', {
        model: 'embed-model',
        input: Array.from({ length: 2000 }, () => 'y'.repeat(600)),
      });
      assert.equal(big.status, 413);
      assert.equal(((await big.json()) as { error: { code: string } }).error.code, 'request_too_large');
      const noKey = await fetch(`${stack.baseURL}/embeddings`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(noKey.status, 401);
    });
  });

  describe('POST /v1/rerank and /v2/rerank', () => {
    const documents = [
      'Bananas are yellow',
      'Paris is the capital of France',
      'Berlin is the capital of Germany',
    ];

    it('sorts by relevance with original indexes, documents, an id and Cohere-style meta', async () => {
      const { status, json } = await rerank({ model: 'rerank', query: 'capital of France', documents });
      assert.equal(status, 200);
      const res = RerankResponseSchema.parse(json);
      assert.deepEqual(
        res.results.map((r) => r.index),
        [1, 2, 0],
      );
      assert.deepEqual(res.results[0]?.document, { text: documents[1] });
      for (const r of res.results) assert.ok(r.relevance_score >= 0 && r.relevance_score <= 1);
      assert.ok((res.results[0]?.relevance_score as number) > (res.results[1]?.relevance_score as number));
      assert.ok(res.id.length > 0);
      const tokens = countTokens('capital of France') + documents.reduce((s, d) => s + countTokens(d), 0);
      assert.deepEqual(res.meta, {
        billed_units: { total_tokens: tokens },
        tokens: { input_tokens: tokens },
      });
    });

    it('the default rerank also finds a paraphrase that shares no word with the query', async () => {
      const docs = [
        'Bananas are rich in potassium.',
        'An automobile dealer sells new and used vehicles.',
        'The stock market fell on Monday.',
      ];
      const { status, json } = await rerank({
        model: 'rerank',
        query: 'where can I buy a car',
        documents: docs,
      });
      assert.equal(status, 200);
      assert.equal(RerankResponseSchema.parse(json).results[0]?.index, 1);
    });

    it('honours top_n (all when larger than the list) and return_documents', async () => {
      const one = await rerank({ model: 'rerank', query: 'capital', documents, top_n: 1 });
      assert.equal((one.json.results as unknown[]).length, 1);
      const all = await rerank({ model: 'rerank', query: 'capital', documents, top_n: 50 });
      assert.equal((all.json.results as unknown[]).length, 3);
      const bare = await rerank({ model: 'rerank', query: 'capital', documents, return_documents: false });
      assert.ok((bare.json.results as Array<Record<string, unknown>>).every((r) => !('document' in r)));
    });

    it('answers the same on the /v2/rerank alias, with the key required', async () => {
      const v1 = await rerank({ model: 'rerank', query: 'capital of Germany', documents });
      const v2 = await rerank({ model: 'rerank', query: 'capital of Germany', documents }, '/v2/rerank');
      assert.equal(v2.status, 200);
      assert.deepEqual(v2.json.results, v1.json.results);
      assert.notEqual(v2.json.id, v1.json.id);
      const noKey = await fetch(`${stack.url}/v2/rerank`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(noKey.status, 401);
    });

    it('refuses bad input with 400 and the offending param', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ model: 'rerank', documents }, 'query'],
        [{ model: 'rerank', query: '', documents }, 'query'],
        [{ model: 'rerank', query: 'q' }, 'documents'],
        [{ model: 'rerank', query: 'q', documents: [] }, 'documents'],
        [{ model: 'rerank', query: 'q', documents: 'one' }, 'documents'],
        [{ model: 'rerank', query: 'q', documents: ['a', 7] }, 'documents[1]'],
        [{ model: 'rerank', query: 'q', documents, top_n: 0 }, 'top_n'],
        [{ model: 'rerank', query: 'q', documents, top_n: 1.5 }, 'top_n'],
        [{ model: 'rerank', query: 'q', documents: Array.from({ length: 1001 }, () => 'd') }, 'documents'],
        [{ model: 'rerank', query: 'word '.repeat(8193), documents }, 'query'],
        [{ model: 'embed-model', query: 'q', documents }, 'model'],
        [{ query: 'q', documents }, 'model'],
      ];
      for (const [body, param] of cases) {
        for (const path of ['/v1/rerank', '/v2/rerank']) {
          const { status, json } = await rerank(body, path);
          const err = json.error as { param: string; code: string };
          assert.equal(status, 400, `${path} ${JSON.stringify(body).slice(0, 80)}`);
          assert.equal(err.param, param, `${path} ${JSON.stringify(body).slice(0, 80)}`);
          assert.equal(err.code, 'invalid_request_error');
        }
      }
    });
  });

  describe('other engines behind the gateway', () => {
    it('embedded llama.cpp: embeddings of the GGUF model and cross-encoder rerank', async () => {
      const client = stack.client('community');
      const res = await client.embeddings.create({
        model: 'embed-llama',
        input: ['the cat sat', 'river stone'],
      });
      assert.equal(res.data.length, 2);
      assert.equal(res.data[0]?.embedding.length, 64);
      assert.ok((res.usage.prompt_tokens as number) >= 4);
      const { status, json } = await rerank({
        model: 'rerank-llama',
        query: 'cat',
        documents: ['the cat sat', 'dog', 'stone'],
      });
      assert.equal(status, 200);
      const r = RerankResponseSchema.parse(json);
      assert.equal(r.results.length, 3);
      assert.deepEqual(r.results.map((x) => x.index).sort(), [0, 1, 2]);
      assert.ok((r.meta.tokens.input_tokens as number) > 0);
    });

    it('TEI and OpenAI-compatible upstreams: embeddings and rerank', async () => {
      const client = stack.client('community');
      const input = ['the cat sat', 'a cat sat down', 'stock prices'];
      const tei = await client.embeddings.create({ model: 'embed-tei', input, encoding_format: 'float' });
      const oai = await client.embeddings.create({ model: 'embed-openai', input, encoding_format: 'float' });
      assert.equal(tei.data[0]?.embedding.length, 32);
      assert.deepEqual(
        oai.data.map((d) => d.embedding),
        tei.data.map((d) => d.embedding),
        'both see the same fake vectors, in input order',
      );
      assert.equal(
        oai.usage.prompt_tokens,
        input.reduce((s, t) => s + countTokens(t) + 2, 0),
        "the upstream's count",
      );
      for (const model of ['rerank-tei', 'rerank-openai']) {
        const { status, json } = await rerank({
          model,
          query: 'cat sat',
          documents: ['stock prices', 'the cat sat'],
        });
        assert.equal(status, 200, model);
        assert.deepEqual(
          (json.results as Array<{ index: number }>).map((r) => r.index),
          [1, 0],
          model,
        );
      }
      // TEI accepts 32 texts per call; 40 texts go out in two calls and come back as one list.
      up.calls.length = 0;
      const forty = await client.embeddings.create({
        model: 'embed-tei',
        input: Array.from({ length: 40 }, (_, i) => `t ${i}`),
      });
      assert.equal(forty.data.length, 40);
      assert.ok(
        up.calls.filter((c) => c.path === '/embed').every((c) => (c.body.inputs as unknown[]).length <= 32),
      );
    });

    it('upstream failures: 4xx is a 400 with its message, 5xx a clean 500', async () => {
      const client = stack.client('community');
      try {
        up.failWith({
          status: 413,
          body: { error: 'Input validation error: inputs must have less than 512 tokens' },
        });
        const refused = await apiError(client.embeddings.create({ model: 'embed-tei', input: 'x' }));
        assert.equal(refused.status, 400);
        assert.match(refused.message, /less than 512 tokens/);
        up.failWith({ status: 502, body: { error: 'upstream internals at 10.0.0.7' } });
        const broken = await apiError(client.embeddings.create({ model: 'embed-openai', input: 'x' }));
        assert.equal(broken.status, 500);
        assert.doesNotMatch(broken.message, /10\.0\.0\.7/);
        const { status } = await rerank({ model: 'rerank-tei', query: 'q', documents: ['d'] });
        assert.equal(status, 500);
      } finally {
        up.failWith(null);
      }
    });

    it('a client that goes away cancels its work down to the upstream call', async () => {
      up.failWith('hang');
      try {
        const ac = new AbortController();
        // Its own connection pool, closed at the end, so that no half-used socket outlives the test.
        const agent = new Agent();
        cleanup.push(() => agent.destroy());
        const p = undiciFetch(`${stack.baseURL}/embeddings`, {
          dispatcher: agent,
          method: 'POST',
          headers: { authorization: `Bearer ${stack.keys.community}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'embed-openai', input: ['will be cancelled'] }),
          signal: ac.signal,
        }).catch(() => null);
        const t0 = Date.now();
        while (up.hangingCalls() === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 10));
        assert.equal(up.hangingCalls(), 1, 'the upstream call started');
        ac.abort();
        await p;
        while (up.hangingCalls() > 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 10));
        assert.equal(up.hangingCalls(), 0, 'the upstream call was aborted');
      } finally {
        up.failWith(null);
      }
    });
  });
});
