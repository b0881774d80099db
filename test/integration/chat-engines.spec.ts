/**
 * The real chat engines through the gateway with the official openai SDK, on a test catalog:
 * - `openai` engine against a local fake OpenAI-compatible server (test/support/fake-openai-upstream.ts):
 *   streaming relayed chunk by chunk, reasoning and tool calls passed through or parsed from the text,
 *   upstream errors mapped, timeouts and refused connections, a client disconnect aborting the upstream
 *   request;
 * - `llama-cpp` engine on a tiny random-weight GGUF written by the test (its output is gibberish: the
 *   mechanics are tested, not the meaning): streaming, max_tokens, grammar-constrained JSON and tool
 *   calls, /v1/completions, /v1/responses, a client disconnect stopping generation.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  CompletionSchema,
  ResponseObjectSchema,
  type UsageEvent,
} from '@infer/contracts';
import type OpenAI from 'openai';
import { type FakeUpstream, startFakeUpstream } from '../support/fake-openai-upstream.js';
import { writeTinyLlamaGguf } from '../support/tiny-llama-gguf.mjs';
import { apiError, type Stack, startStack } from './harness.js';

const caps = {
  streaming: true,
  tools: true,
  vision: true,
  response_format: true,
  completions: true,
  responses: true,
};

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

describe('real chat engines through the gateway (openai SDK)', () => {
  let up: FakeUpstream;
  let stack: Stack;
  let dir: string;
  let client: OpenAI;
  const usageEvents: UsageEvent[] = [];

  before(async () => {
    up = await startFakeUpstream();
    dir = mkdtempSync(join(tmpdir(), 'chat-engines-'));
    const gguf = writeTinyLlamaGguf(join(dir, 'tiny.gguf'));
    const upstream = (
      id: string,
      scenario: string,
      extra: Record<string, unknown> = {},
      reasoning = 'none',
    ) => ({
      id,
      kind: 'chat',
      rank: 10,
      tiers: ['community', 'inference', 'premium'],
      context_window: 32768,
      capabilities: { ...caps, reasoning },
      engine: { type: 'openai', base_url: up.url, model: scenario, ...extra },
    });
    const llama = (id: string, reasoning: string, extra: Record<string, unknown> = {}) => ({
      id,
      kind: 'chat',
      rank: 20,
      tiers: ['community', 'inference', 'premium'],
      context_window: 4096,
      default_max_output_tokens: 64,
      capabilities: { ...caps, vision: false, reasoning },
      engine: {
        type: 'llama-cpp',
        gguf,
        threads: 1,
        context_size: 4096,
        reasoning_budget: 6,
        parallel: 2,
        ...extra,
      },
    });
    const catalog = {
      models: [
        upstream('up-plain', 'plain', {}, 'default_on'),
        upstream('up-think', 'think-inline', {}, 'default_on'),
        upstream('up-think-native', 'think-native', {}, 'default_on'),
        upstream('up-tools', 'tools-hermes'),
        upstream('up-tools-native', 'tools-native'),
        upstream('up-echo', 'echo', {}, 'effort'),
        upstream('up-bad', 'bad-request'),
        upstream('up-5xx', 'server-error'),
        upstream('up-hang', 'hang', { timeout_ms: 400 }),
        upstream('up-slow', 'slow'),
        {
          ...upstream('up-refused', 'plain'),
          engine: { type: 'openai', base_url: `http://127.0.0.1:${await closedPort()}/v1` },
        },
        llama('tiny', 'default_on'),
        llama('tiny-plain', 'none'),
      ],
    };
    const catalogFile = join(dir, 'models.json');
    writeFileSync(catalogFile, JSON.stringify(catalog));
    stack = await startStack({ catalogFile, env: { MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.` } });
    client = stack.client('inference');
    // Usage events as the gateway publishes them (JetStream subjects are visible to core subscribers).
    stack.chat.nc.subscribe(`${stack.usageRoot}.>`, {
      callback: (_e, m) => {
        usageEvents.push(JSON.parse(new TextDecoder().decode(m.data)) as UsageEvent);
      },
    });
  });
  after(async () => {
    await stack?.close();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const chat = (body: Record<string, unknown>) =>
    client.chat.completions.create(body as never) as Promise<OpenAI.ChatCompletion>;
  const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Hi there' }];
  const waitFor = async (cond: () => boolean, ms = 3000) => {
    for (let t = 0; t < ms && !cond(); t += 10) await new Promise((r) => setTimeout(r, 10));
    return cond();
  };

  describe('openai upstream engine', () => {
    it('answers with the upstream text and the upstream usage; the request carries the spec defaults', async () => {
      const r = await chat({ model: 'up-plain', messages: hi });
      ChatCompletionSchema.parse(r);
      assert.equal(r.choices[0]?.message.content, 'Hello from the upstream.');
      assert.deepEqual(r.usage, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
      const sent = up.requests.at(-1)?.body;
      assert.equal(sent?.temperature, 0.6);
      assert.equal(sent?.top_p, 0.95);
      assert.equal(sent?.stream, true);
      assert.deepEqual(sent?.chat_template_kwargs, { enable_thinking: true });
      assert.deepEqual(sent?.messages, hi);
      await chat({
        model: 'up-echo',
        messages: hi,
        reasoning_effort: 'high',
        temperature: 0.2,
        max_tokens: 50,
        stop: ['x'],
      });
      const echoed = up.requests.at(-1)?.body;
      assert.equal(echoed?.reasoning_effort, 'high');
      assert.equal(echoed?.temperature, 0.2);
      assert.equal(echoed?.max_tokens, 50);
      assert.deepEqual(echoed?.stop, ['x']);
    });

    it('relays a stream chunk by chunk, with reasoning parsed out of <think> text', async () => {
      const stream = await client.chat.completions.create({
        model: 'up-think',
        messages: hi,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = [];
      for await (const c of stream) chunks.push(ChatCompletionChunkSchema.parse(c));
      const deltas = chunks.flatMap((c) => c.choices.map((x) => x.delta));
      const reasoning = deltas.map((d) => d.reasoning_content ?? '').join('');
      const content = deltas.map((d) => d.content ?? '').join('');
      assert.equal(reasoning, 'Let me think.');
      assert.equal(content, 'The answer is 4.');
      assert.ok(
        deltas.filter((d) => d.content).length >= 2,
        'several content chunks, not one buffered answer',
      );
      assert.equal(chunks.at(-1)?.usage?.total_tokens, 18);
      const native = await chat({ model: 'up-think-native', messages: hi });
      assert.equal(
        (native.choices[0]?.message as { reasoning_content?: string } | undefined)?.reasoning_content,
        'Pondering deeply.',
      );
    });

    it('returns tool calls parsed from Hermes text, and native ones passed through', async () => {
      const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
      for (const model of ['up-tools', 'up-tools-native']) {
        const r = await chat({ model, messages: hi, tools });
        assert.equal(r.choices[0]?.finish_reason, 'tool_calls', model);
        const call = r.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
        assert.equal(call.function.name, 'get_weather');
        assert.equal(JSON.parse(call.function.arguments).city, 'Paris');
      }
    });

    it('maps errors: upstream 4xx -> 400 with its message, 5xx / timeout / refused -> clean 500', async () => {
      const bad = await apiError(chat({ model: 'up-bad', messages: hi }));
      assert.equal(bad.status, 400);
      assert.match(bad.message, /maximum context length is 4096/);
      assert.equal(bad.param, 'max_tokens');
      for (const model of ['up-5xx', 'up-hang', 'up-refused']) {
        const e = await apiError(chat({ model, messages: hi }));
        assert.equal(e.status, 500, model);
        assert.doesNotMatch(e.message, /CUDA|secret|127\.0\.0\.1/);
      }
      const streamed = await apiError(
        client.chat.completions.create({ model: 'up-5xx', messages: hi, stream: true }),
      );
      assert.equal(streamed.status, 500, 'an error before the first chunk keeps its status');
    });

    it('serves /v1/completions from the upstream /completions', async () => {
      const r = await client.completions.create({ model: 'up-plain', prompt: 'Once' });
      CompletionSchema.parse(r);
      assert.equal(r.choices[0]?.text, 'Hello from the upstream.');
      assert.equal(up.requests.at(-1)?.path, '/v1/completions');
    });

    it('aborts the upstream request when the client disconnects', async () => {
      const before = up.closed;
      const ac = new AbortController();
      const stream = await client.chat.completions.create(
        { model: 'up-slow', messages: hi, stream: true },
        { signal: ac.signal },
      );
      let n = 0;
      try {
        for await (const _ of stream) {
          if (++n === 3) ac.abort();
        }
      } catch {
        // the SDK throws on abort
      }
      assert.ok(await waitFor(() => up.closed > before), 'the upstream saw its request aborted');
      assert.ok(await waitFor(() => usageEvents.some((e) => e.model === 'up-slow' && e.status === 499)));
    });
  });

  describe('llama-cpp engine (tiny random-weight GGUF)', () => {
    it('streams reasoning then content, ends at max_tokens with exact usage', async () => {
      const stream = await client.chat.completions.create({
        model: 'tiny',
        messages: hi,
        max_tokens: 20,
        seed: 3,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = [];
      for await (const c of stream) chunks.push(ChatCompletionChunkSchema.parse(c));
      const kinds = chunks
        .flatMap((c) => c.choices.map((x) => x.delta))
        .map((d) => (d.reasoning_content ? 'r' : d.content ? 'c' : ''))
        .join('');
      assert.match(kinds, /^r+c+$/);
      assert.equal(chunks.filter((c) => c.choices.length).at(-1)?.choices[0]?.finish_reason, 'length');
      assert.equal(chunks.at(-1)?.usage?.completion_tokens, 20);
      const unary = await chat({ model: 'tiny', messages: hi, max_tokens: 20, seed: 3 });
      assert.deepEqual(unary.usage, chunks.at(-1)?.usage, 'same seed, same exact usage');
    });

    it('gives grammar-constrained JSON that validates, and forced tool calls', async () => {
      const schema = {
        type: 'object',
        properties: {
          city: { type: 'string', maxLength: 8 },
          days: { type: 'integer', minimum: 1, maximum: 5 },
        },
        required: ['city', 'days'],
        additionalProperties: false,
      };
      const r = await chat({
        model: 'tiny-plain',
        messages: hi,
        seed: 1,
        max_tokens: 200,
        response_format: { type: 'json_schema', json_schema: { name: 'trip', strict: true, schema } },
      });
      assert.equal(r.choices[0]?.finish_reason, 'stop');
      const v = JSON.parse(r.choices[0]?.message.content ?? '');
      assert.deepEqual(Object.keys(v).sort(), ['city', 'days']);
      assert.ok(Number.isInteger(v.days) && v.days >= 1 && v.days <= 5);
      assert.ok([...v.city].length <= 8);
      const t = await chat({
        model: 'tiny-plain',
        messages: hi,
        seed: 2,
        max_tokens: 200,
        tools: [{ type: 'function', function: { name: 'plan', parameters: schema } }],
        tool_choice: { type: 'function', function: { name: 'plan' } },
      });
      assert.equal(t.choices[0]?.finish_reason, 'tool_calls');
      const call = t.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      assert.equal(call.function.name, 'plan');
      assert.ok(Number.isInteger(JSON.parse(call.function.arguments).days));
    });

    it('serves /v1/completions and /v1/responses (reasoning item, default max_output_tokens from the catalog)', async () => {
      const c = await client.completions.create({
        model: 'tiny',
        prompt: 'Once upon a time',
        max_tokens: 5,
        seed: 1,
      });
      assert.equal(c.choices[0]?.finish_reason, 'length');
      assert.equal(c.usage?.completion_tokens, 5);
      const r = await client.responses.create({ model: 'tiny', input: 'Hello', instructions: 'Be brief.' });
      ResponseObjectSchema.parse(r);
      assert.deepEqual(
        r.output.map((o) => o.type),
        ['reasoning', 'message'],
      );
      assert.equal(r.max_output_tokens, 64);
      assert.ok((r.usage?.output_tokens ?? 0) <= 64);
      assert.equal(r.usage?.output_tokens_details?.reasoning_tokens, 6);
    });

    it('refuses image input (the embedded engine has none) and over-long requests', async () => {
      const img = [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }],
        },
      ];
      const e = await apiError(chat({ model: 'tiny', messages: img }));
      assert.equal(e.status, 400);
      assert.equal(e.param, 'messages[0].content[0]');
      const long = await apiError(chat({ model: 'tiny', messages: hi, max_tokens: 4090 }));
      assert.equal(long.status, 400);
      assert.match(long.message, /maximum context length is 4096 tokens/);
    });

    it('stops generating when the client disconnects', async () => {
      const ac = new AbortController();
      const stream = await client.chat.completions.create(
        { model: 'tiny-plain', messages: hi, max_tokens: 4000, seed: 1, stream: true },
        { signal: ac.signal },
      );
      let n = 0;
      try {
        for await (const _ of stream) {
          if (++n === 5) ac.abort();
        }
      } catch {
        // the SDK throws on abort
      }
      assert.ok(await waitFor(() => usageEvents.some((e) => e.model === 'tiny-plain' && e.status === 499)));
      const ev = usageEvents.find((e) => e.model === 'tiny-plain' && e.status === 499);
      assert.ok(
        (ev?.completionTokens ?? 0) >= 4 && (ev?.completionTokens ?? 0) < 1000,
        `${ev?.completionTokens} tokens`,
      );
      assert.ok(await waitFor(() => stack.chat.rpc.inflightCount === 0), 'no generation left running');
    });
  });
});
