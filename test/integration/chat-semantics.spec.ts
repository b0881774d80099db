/**
 * The chat semantics of the spec through the gateway with the official openai SDK, on the default
 * catalog (every chat model on the simulator engine, a test double): defaults and limits, stop, n,
 * tools round trips, structured output, reasoning switches model by model, image and audio parts,
 * the context window, /v1/completions and /v1/responses, and each 400 with its param. The real
 * engines are driven through the gateway in chat-engines.spec.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  CompletionChunkSchema,
  CompletionSchema,
  ResponseCompletedEventSchema,
  ResponseObjectSchema,
} from '@infer/contracts';
import type OpenAI from 'openai';
import { apiError, type Stack, startStack } from './harness.js';

const PNG_1PX = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const PNG_URI = `data:image/png;base64,${PNG_1PX.toString('base64')}`;
const WAV_B64 = Buffer.concat([
  Buffer.from('RIFF'),
  Buffer.from([36, 0, 0, 0]),
  Buffer.from('WAVEfmt '),
  Buffer.alloc(24),
  Buffer.from('data'),
  Buffer.alloc(4),
]).toString('base64');

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { enum: ['c', 'f'] } },
      required: ['city', 'unit'],
    },
  },
};
const user = (content: string) => [{ role: 'user' as const, content }];
type Extra = Record<string, unknown>;

describe('chat semantics through the gateway (openai SDK, simulator engines)', () => {
  let stack: Stack;
  let images: Server;
  let imageHost: string;
  let client: OpenAI;
  let premium: OpenAI;

  before(async () => {
    images = createServer((req, res) => {
      if (req.url === '/cat.png') res.writeHead(200, { 'content-type': 'image/png' }).end(PNG_1PX);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
    imageHost = `127.0.0.1:${(images.address() as AddressInfo).port}`;
    // The image server is on loopback: the operator setting MEDIA_FETCH_ALLOW_HOSTS lets it through.
    stack = await startStack({
      env: { MEDIA_FETCH_ALLOW_HOSTS: imageHost, MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.` },
    });
    client = stack.client('inference');
    premium = stack.client('premium');
  });
  after(async () => {
    await stack?.close();
    images?.closeAllConnections();
    await new Promise<void>((r) => (images ? images.close(() => r()) : r()));
  });

  const chat = (body: Extra, c = client) =>
    c.chat.completions.create(body as never) as Promise<OpenAI.ChatCompletion>;
  async function bad(p: Promise<unknown>, param: string, message?: RegExp) {
    const e = await apiError(p);
    assert.equal(e.status, 400, `${param}: ${e.message}`);
    assert.equal(e.code, 'invalid_request_error');
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.param, param, e.message);
    if (message) assert.match(e.message, message);
    return e;
  }

  describe('sampling, length, stop, n', () => {
    it('takes temperature 0..2 and top_p 0..1 and refuses values outside', async () => {
      for (const [temperature, top_p] of [
        [0, 0],
        [2, 1],
        [0.6, 0.95],
      ]) {
        const r = await chat({ model: 'chat-F', messages: user('x'), temperature, top_p, max_tokens: 2 });
        assert.equal(r.choices[0]?.finish_reason, 'length');
      }
      await bad(chat({ model: 'chat-F', messages: user('x'), temperature: -0.1 }), 'temperature');
      await bad(chat({ model: 'chat-F', messages: user('x'), top_p: -1 }), 'top_p');
      await bad(chat({ model: 'chat-F', messages: user('x'), max_tokens: 1.5 }), 'max_tokens');
    });

    it('ends with finish_reason length exactly at max_tokens, and stop cuts before the stop sequence', async () => {
      const r = await chat({ model: 'chat-F', messages: user('tell me'), max_tokens: 20 });
      assert.equal(r.choices[0]?.finish_reason, 'length');
      assert.equal(r.usage?.completion_tokens, 20);
      const text = r.choices[0]?.message.content ?? '';
      const stop = ` ${text.split(' ')[4]}`;
      const s = await chat({
        model: 'chat-F',
        messages: user('tell me'),
        max_tokens: 20,
        stop: [stop, 'NEVER'],
      });
      assert.equal(s.choices[0]?.finish_reason, 'stop');
      assert.equal(s.choices[0]?.message.content, text.slice(0, text.indexOf(stop)));
      assert.ok(!s.choices[0]?.message.content?.includes(stop.trim()) || text.indexOf(stop) > 0);
      await bad(chat({ model: 'chat-F', messages: user('x'), stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop');
    });

    it('returns n choices with their own text, prompt counted once', async () => {
      const one = await chat({ model: 'chat-F', messages: user('hello'), max_tokens: 5 });
      const r = await chat({ model: 'chat-F', messages: user('hello'), max_tokens: 5, n: 3 });
      ChatCompletionSchema.parse(r);
      assert.deepEqual(
        r.choices.map((c) => c.index),
        [0, 1, 2],
      );
      assert.equal(new Set(r.choices.map((c) => c.message.content)).size, 3);
      assert.equal(r.usage?.prompt_tokens, one.usage?.prompt_tokens);
      assert.equal(r.usage?.completion_tokens, 15);
      await bad(chat({ model: 'chat-F', messages: user('x'), n: 0 }), 'n');
    });
  });

  describe('tools', () => {
    it('round trip: tool_calls with JSON arguments, then a tool message answering the call', async () => {
      const first = await chat({
        model: 'chat-E',
        messages: user('What is the weather in Paris?'),
        tools: [weather],
        tool_choice: 'required',
        chat_template_kwargs: { enable_thinking: false },
      });
      ChatCompletionSchema.parse(first);
      const choice = first.choices[0];
      assert.equal(choice?.finish_reason, 'tool_calls');
      assert.equal(choice?.message.content, null);
      const call = choice?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'get_weather');
      const args = JSON.parse(call.function.arguments);
      assert.equal(typeof args.city, 'string');
      assert.ok(['c', 'f'].includes(args.unit));

      const second = await chat({
        model: 'chat-E',
        messages: [
          ...user('What is the weather in Paris?'),
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' },
        ],
        tools: [weather],
        max_tokens: 20,
      });
      assert.equal(second.choices[0]?.finish_reason, 'length');
      assert.ok(second.choices[0]?.message.content);
    });

    it('streams tool calls as tool_calls deltas: id and name first, then argument pieces', async () => {
      const stream = await client.chat.completions.create({
        model: 'chat-F',
        messages: user('call it'),
        tools: [weather],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        stream: true,
      });
      const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      let finish: string | null | undefined;
      for await (const c of stream) {
        ChatCompletionChunkSchema.parse(c);
        deltas.push(...(c.choices[0]?.delta.tool_calls ?? []));
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(deltas[0]?.function?.name, 'get_weather');
      assert.match(deltas[0]?.id ?? '', /^call_/);
      const args = deltas.map((d) => d.function?.arguments ?? '').join('');
      assert.doesNotThrow(() => JSON.parse(args));
      assert.equal(finish, 'tool_calls');
    });

    it("tool_choice 'none' answers in text; 'auto' calls only when asked", async () => {
      const none = await chat({
        model: 'chat-F',
        messages: user('get_weather please'),
        tools: [weather],
        tool_choice: 'none',
      });
      assert.equal(none.choices[0]?.finish_reason, 'stop');
      assert.equal(none.choices[0]?.message.tool_calls, undefined);
      const auto = await chat({ model: 'chat-F', messages: user('get_weather please'), tools: [weather] });
      assert.equal(auto.choices[0]?.finish_reason, 'tool_calls');
    });

    it('400s: forced name not in tools, tool_choice without tools, bad names, unanswered tool_call_id', async () => {
      await bad(
        chat({
          model: 'chat-F',
          messages: user('x'),
          tools: [weather],
          tool_choice: { type: 'function', function: { name: 'nope' } },
        }),
        'tool_choice',
        /'nope'/,
      );
      await bad(chat({ model: 'chat-F', messages: user('x'), tool_choice: 'required' }), 'tool_choice');
      await bad(
        chat({
          model: 'chat-F',
          messages: user('x'),
          tools: [{ type: 'function', function: { name: 'a'.repeat(65) } }],
        }),
        'tools[0].function.name',
      );
      await bad(
        chat({
          model: 'chat-F',
          messages: user('x'),
          tools: [{ type: 'retrieval', function: { name: 'a' } }],
        }),
        'tools[0].type',
      );
      await bad(
        chat({
          model: 'chat-F',
          messages: user('x'),
          tools: [weather, { type: 'function', function: { name: 'b', parameters: { type: 'nonsense' } } }],
        }),
        'tools[1].function.parameters',
      );
      await bad(
        chat({
          model: 'chat-F',
          messages: [
            ...user('x'),
            {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
              ],
            },
            { role: 'tool', tool_call_id: 'call_2', content: 'r' },
          ],
        }),
        'messages[2].tool_call_id',
        /call_2/,
      );
      await bad(
        chat({
          model: 'chat-F',
          messages: [{ role: 'tool', tool_call_id: 'call_1', content: 'r' }, ...user('x')],
        }),
        'messages[0].tool_call_id',
      );
      await bad(
        chat({ model: 'chat-F', messages: [...user('x'), { role: 'assistant', content: null }] }),
        'messages[1].content',
      );
    });
  });

  describe('response_format', () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
      required: ['name', 'age'],
      additionalProperties: false,
    };

    it('json_schema and json_object on chat-E and chat-F give JSON content', async () => {
      for (const model of ['chat-E', 'chat-F']) {
        const r = await chat({
          model,
          messages: user('A person, please'),
          response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } },
        });
        const v = JSON.parse(r.choices[0]?.message.content ?? '');
        assert.equal(typeof v.name, 'string');
        assert.ok(Number.isInteger(v.age) && v.age >= 0);
        assert.deepEqual(Object.keys(v).sort(), ['age', 'name'], 'strict: no fields outside the schema');
        const o = await chat({
          model,
          messages: user('JSON please'),
          response_format: { type: 'json_object' },
        });
        assert.equal(typeof JSON.parse(o.choices[0]?.message.content ?? ''), 'object');
      }
    });

    it('is a 400 on the other models, and for a bad schema', async () => {
      for (const model of ['chat-A', 'chat-B', 'chat-C', 'chat-D']) {
        await bad(
          chat({ model, messages: user('x'), response_format: { type: 'json_object' } }),
          'response_format',
        );
      }
      await bad(
        chat({ model: 'chat-G', messages: user('x'), response_format: { type: 'json_object' } }, premium),
        'response_format',
      );
      await bad(
        chat({
          model: 'chat-E',
          messages: user('x'),
          response_format: { type: 'json_schema', json_schema: { name: 'x' } },
        }),
        'response_format.json_schema.schema',
      );
      await bad(
        chat({
          model: 'chat-E',
          messages: user('x'),
          response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $ref: '#/missing' } } },
        }),
        'response_format.json_schema.schema',
      );
      const text = await chat({
        model: 'chat-F',
        messages: user('x'),
        response_format: { type: 'text' },
        max_tokens: 2,
      });
      assert.ok(text.choices[0]?.message.content, "type 'text' is the default, accepted everywhere");
    });
  });

  describe('reasoning, model by model', () => {
    const reasons = async (model: string, extra: Extra = {}, c = client) => {
      const r = await chat({ model, messages: user('think'), max_tokens: 30, ...extra }, c);
      const rc = (r.choices[0]?.message as { reasoning_content?: string } | undefined)?.reasoning_content;
      return typeof rc === 'string' && rc.length > 0;
    };

    it('chat-A: reasoning_effort low/medium/high (default medium); enable_thinking false is a 400', async () => {
      assert.equal(await reasons('chat-A'), true);
      for (const reasoning_effort of ['low', 'medium', 'high'])
        assert.equal(await reasons('chat-A', { reasoning_effort }), true);
      await bad(
        chat({ model: 'chat-A', messages: user('x'), chat_template_kwargs: { enable_thinking: false } }),
        'chat_template_kwargs.enable_thinking',
      );
    });

    it('chat-B always reasons and ignores both switches', async () => {
      assert.equal(await reasons('chat-B'), true);
      assert.equal(
        await reasons('chat-B', {
          reasoning_effort: 'low',
          chat_template_kwargs: { enable_thinking: false },
        }),
        true,
      );
    });

    it('chat-C and chat-D reason by default, chat-G returns a trace; they have no switch', async () => {
      assert.equal(await reasons('chat-C'), true);
      assert.equal(await reasons('chat-D'), true);
      assert.equal(await reasons('chat-G', {}, premium), true);
      await bad(chat({ model: 'chat-C', messages: user('x'), reasoning_effort: 'high' }), 'reasoning_effort');
      await bad(
        chat({ model: 'chat-D', messages: user('x'), chat_template_kwargs: { enable_thinking: false } }),
        'chat_template_kwargs.enable_thinking',
      );
    });

    it('chat-E: enable_thinking default on; chat-F: default off; reasoning_effort is a 400 on both', async () => {
      assert.equal(await reasons('chat-E'), true);
      assert.equal(await reasons('chat-E', { chat_template_kwargs: { enable_thinking: false } }), false);
      assert.equal(await reasons('chat-F'), false);
      assert.equal(await reasons('chat-F', { chat_template_kwargs: { enable_thinking: true } }), true);
      await bad(chat({ model: 'chat-E', messages: user('x'), reasoning_effort: 'low' }), 'reasoning_effort');
      await bad(chat({ model: 'chat-F', messages: user('x'), reasoning_effort: 'low' }), 'reasoning_effort');
    });

    it('streams the trace as reasoning_content deltas before the content', async () => {
      const stream = await client.chat.completions.create({
        model: 'chat-E',
        messages: user('think'),
        max_tokens: 20,
        stream: true,
      });
      const kinds: string[] = [];
      for await (const c of stream) {
        const d = c.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
        if (d?.reasoning_content) kinds.push('r');
        else if (d?.content) kinds.push('c');
      }
      assert.match(kinds.join(''), /^r+c+$/);
    });
  });

  describe('content parts', () => {
    it('takes image_url as a data: URI or a fetched URL on every chat model but chat-G', async () => {
      const parts = (url: string) => [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url } },
          ],
        },
      ];
      const textOnly = await chat({ model: 'chat-A', messages: user('What is this?'), max_tokens: 3 });
      for (const model of ['chat-A', 'chat-B', 'chat-C', 'chat-D', 'chat-E', 'chat-F']) {
        const r = await chat({ model, messages: parts(PNG_URI), max_tokens: 3 });
        assert.equal(r.choices[0]?.finish_reason, 'length', model);
      }
      const fetched = await chat({
        model: 'chat-A',
        messages: parts(`http://${imageHost}/cat.png`),
        max_tokens: 3,
      });
      assert.ok(
        (fetched.usage?.prompt_tokens ?? 0) > (textOnly.usage?.prompt_tokens ?? 0),
        'the image counts in the prompt',
      );
      await bad(
        chat({ model: 'chat-G', messages: parts(PNG_URI) }, premium),
        'messages[0].content[1]',
        /text only/,
      );
    });

    it('refuses image URLs that point inside the network, and images that are not images', async () => {
      const msg = (url: string) => [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }];
      await bad(
        chat({ model: 'chat-A', messages: msg(`http://localhost:${imageHost.split(':')[1]}/cat.png`) }),
        'messages[0].content[0].image_url.url',
        /public address/,
      );
      await bad(
        chat({ model: 'chat-A', messages: msg('http://169.254.169.254/latest/meta-data/') }),
        'messages[0].content[0].image_url.url',
      );
      await bad(
        chat({ model: 'chat-A', messages: msg(`http://${imageHost}/missing.png`) }),
        'messages[0].content[0].image_url.url',
        /404/,
      );
      await bad(
        chat({ model: 'chat-A', messages: msg('data:image/png;base64,aGVsbG8=') }),
        'messages[0].content[0].image_url.url',
        /not a PNG/,
      );
      await bad(
        chat({ model: 'chat-A', messages: msg('file:///etc/passwd') }),
        'messages[0].content[0].image_url.url',
      );
    });

    it('takes input_audio on chat-B only', async () => {
      const msg = [
        { role: 'user', content: [{ type: 'input_audio', input_audio: { data: WAV_B64, format: 'wav' } }] },
      ];
      const r = await chat({ model: 'chat-B', messages: msg, max_tokens: 3 });
      assert.equal(r.choices[0]?.finish_reason, 'length');
      for (const model of ['chat-A', 'chat-E'])
        await bad(chat({ model, messages: msg }), 'messages[0].content[0]', /audio/);
      await bad(
        chat({
          model: 'chat-B',
          messages: [
            {
              role: 'user',
              content: [{ type: 'input_audio', input_audio: { data: WAV_B64, format: 'mp3' } }],
            },
          ],
        }),
        'messages[0].content[0].input_audio.data',
      );
    });
  });

  describe('context window', () => {
    it('refuses prompt + max_tokens beyond the context with a message stating both numbers', async () => {
      const e = await bad(
        chat({ model: 'chat-E', messages: user('hello there'), max_tokens: 131_070 }),
        'messages',
      );
      assert.match(e.message, /maximum context length is 131072 tokens/);
      const m = /you requested (\d+) tokens \((\d+) in the messages, 131070 in max_tokens\)/.exec(e.message);
      assert.ok(m, e.message);
      assert.equal(Number(m?.[1]), Number(m?.[2]) + 131_070);
      // 140,000 tokens in 840 kB: over chat-E's window, under the 1 MB of one NATS message.
      const long = 'lorem '.repeat(140_000);
      const e2 = await bad(
        chat({ model: 'chat-E', messages: user(long) }),
        'messages',
        /maximum context length is 131072 tokens/,
      );
      assert.match(e2.message, /resulted in 1400\d\d tokens/);
      const huge = await apiError(chat({ model: 'chat-C', messages: user('lorem '.repeat(300_000)) }));
      assert.equal(huge.status, 413, 'a body larger than one NATS message is refused cleanly');
    });
  });

  describe('POST /v1/completions (chat-E only)', () => {
    it('answers text_completion objects with logprobs null and exact usage', async () => {
      const r = await client.completions.create({
        model: 'chat-E',
        prompt: 'Once upon a time',
        max_tokens: 7,
      });
      CompletionSchema.parse(r);
      assert.equal(r.object, 'text_completion');
      assert.equal(r.model, 'chat-E');
      assert.equal(r.choices[0]?.logprobs, null);
      assert.equal(r.choices[0]?.finish_reason, 'length');
      assert.equal(r.usage?.completion_tokens, 7);
      assert.equal(r.usage?.prompt_tokens, 4);
      const free = await client.completions.create({ model: 'chat-E', prompt: 'Once upon a time' });
      assert.equal(free.choices[0]?.finish_reason, 'stop');
    });

    it('streams text_completion chunks and ends with data: [DONE]', async () => {
      const stream = await client.completions.create({
        model: 'chat-E',
        prompt: 'Once upon a time',
        max_tokens: 6,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = [];
      for await (const c of stream) chunks.push(CompletionChunkSchema.parse(c));
      const text = chunks
        .flatMap((c) => c.choices)
        .map((c) => c.text)
        .join('');
      const unary = await client.completions.create({
        model: 'chat-E',
        prompt: 'Once upon a time',
        max_tokens: 6,
      });
      assert.equal(text, unary.choices[0]?.text);
      assert.equal(
        chunks.filter((c) => c.choices[0]?.finish_reason).at(-1)?.choices[0]?.finish_reason,
        'length',
      );
      assert.equal(chunks.at(-1)?.usage?.completion_tokens, 6);
      const raw = await fetch(`${stack.baseURL}/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-E', prompt: 'hi', max_tokens: 2, stream: true }),
      });
      const events = (await raw.text()).split('\n\n').filter(Boolean);
      assert.ok(events.every((e) => e.startsWith('data: ')));
      assert.equal(events.at(-1), 'data: [DONE]');
    });

    it('is a 400 naming model on the other chat models, and checks its fields', async () => {
      for (const model of ['chat-A', 'chat-F']) {
        await bad(client.completions.create({ model, prompt: 'x' }), 'model', /completions/);
      }
      await bad(client.completions.create({ model: 'chat-E' } as never), 'prompt');
      await bad(client.completions.create({ model: 'chat-E', prompt: 'x', max_tokens: 0 }), 'max_tokens');
      await bad(client.completions.create({ model: 'chat-E', prompt: 'x', temperature: 3 }), 'temperature');
      await bad(
        client.completions.create({ model: 'chat-E', prompt: 'x', max_tokens: 200_000 }),
        'prompt',
        /131072/,
      );
    });
  });

  describe('POST /v1/responses (chat-E and chat-F)', () => {
    it('chat-E: a reasoning item, then the message item; usage; max_output_tokens default 65536', async () => {
      const r = await client.responses.create({
        model: 'chat-E',
        input: 'Hello there',
        instructions: 'Be brief.',
      });
      ResponseObjectSchema.parse(r);
      assert.equal(r.object, 'response');
      assert.equal(r.status, 'completed');
      assert.equal(r.model, 'chat-E');
      assert.deepEqual(
        r.output.map((o) => o.type),
        ['reasoning', 'message'],
      );
      const reasoning = r.output[0] as OpenAI.Responses.ResponseReasoningItem;
      assert.ok(reasoning.content?.[0]?.text);
      assert.equal(reasoning.content?.[0]?.type, 'reasoning_text');
      const msg = r.output[1] as OpenAI.Responses.ResponseOutputMessage;
      assert.equal(msg.role, 'assistant');
      assert.equal(msg.content[0]?.type, 'output_text');
      assert.ok(r.output_text.length > 0, 'the SDK finds the text');
      assert.equal(r.usage?.total_tokens, (r.usage?.input_tokens ?? 0) + (r.usage?.output_tokens ?? 0));
      assert.ok((r.usage?.output_tokens_details?.reasoning_tokens ?? 0) > 0);
      assert.equal(r.max_output_tokens, 65536);
      assert.equal(r.temperature, 0.6);
      assert.equal(r.top_p, 0.95);
      assert.equal(r.instructions, 'Be brief.');
      const withoutInstructions = await client.responses.create({ model: 'chat-E', input: 'Hello there' });
      assert.ok(
        (withoutInstructions.usage?.input_tokens ?? 0) < (r.usage?.input_tokens ?? 0),
        'instructions are part of the prompt',
      );
    });

    it('chat-F: only the message item; input as Responses-format messages; max_output_tokens cuts', async () => {
      const r = await client.responses.create({
        model: 'chat-F',
        input: [
          { role: 'user', content: 'Hi' },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello!' }] } as never,
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'And this?' },
              { type: 'input_image', image_url: PNG_URI, detail: 'auto' },
            ],
          },
        ],
        max_output_tokens: 5,
        temperature: 0,
        top_p: 1,
      });
      assert.deepEqual(
        r.output.map((o) => o.type),
        ['message'],
      );
      assert.equal(r.status, 'incomplete');
      assert.equal(r.incomplete_details?.reason, 'max_output_tokens');
      assert.equal(r.usage?.output_tokens, 5);
      assert.equal(r.temperature, 0);
      const done = await client.responses.create({ model: 'chat-F', input: 'Hi' });
      assert.equal(done.status, 'completed');
    });

    it('with stream: true streams the Responses event sequence, ending with response.completed (the whole response)', async () => {
      const stream = await client.responses.create({ model: 'chat-E', input: 'Hello', stream: true });
      const events = [];
      for await (const e of stream) events.push(e);
      assert.equal(events[0]?.type, 'response.created');
      assert.equal(events[1]?.type, 'response.in_progress');
      const types = new Set(events.map((e) => e.type));
      for (const t of [
        'response.reasoning_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
      ])
        assert.ok(types.has(t as never), t);
      assert.deepEqual(
        events.map((e) => e.sequence_number),
        events.map((_, i) => i),
      );
      const ev = ResponseCompletedEventSchema.parse(events.at(-1));
      assert.equal(ev.response.status, 'completed');
      const text = events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => (e as { delta: string }).delta)
        .join('');
      const msg = ev.response.output.find((o) => o.type === 'message');
      assert.equal(msg?.type === 'message' && msg.content[0]?.text, text);
      // The SDK's helper accumulates the events.
      const helper = client.responses.stream({ model: 'chat-F', input: 'Hi' });
      let deltas = '';
      helper.on('response.output_text.delta', (e) => {
        deltas += e.delta;
      });
      const final = await helper.finalResponse();
      assert.ok(final.output_text.length > 0);
      assert.equal(final.output_text, deltas);
      const raw = await fetch(`${stack.baseURL}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-F', input: 'Hi', stream: true }),
      });
      assert.match(raw.headers.get('content-type') ?? '', /^text\/event-stream/);
      const body = await raw.text();
      const frames = body.split('\n\n').filter(Boolean);
      assert.match(frames[0] ?? '', /^event: response\.created\ndata: \{/);
      assert.match(frames.at(-1) ?? '', /^event: response\.completed\ndata: \{/);
      assert.ok(!body.includes('[DONE]'));
    });

    it('function tools: function_call items, function_call_output round trip, tool_choice; text.format', async () => {
      const tool = {
        type: 'function' as const,
        name: 'get_weather',
        description: 'Current weather in a city',
        parameters: weather.function.parameters,
        strict: true,
      };
      const first = await client.responses.create({
        model: 'chat-E',
        input: 'What is the weather in Oslo?',
        tools: [tool],
        tool_choice: 'required',
      });
      assert.equal(first.tool_choice, 'required');
      assert.equal(first.tools.length, 1);
      assert.equal(first.parallel_tool_calls, true);
      assert.deepEqual(first.metadata, {});
      const call = first.output.find((o) => o.type === 'function_call');
      assert.ok(call && call.type === 'function_call', JSON.stringify(first.output));
      assert.equal(call.name, 'get_weather');
      const args = JSON.parse(call.arguments) as { city: unknown; unit: unknown };
      assert.equal(typeof args.city, 'string');
      assert.ok(['c', 'f'].includes(args.unit as string));
      const second = await client.responses.create({
        model: 'chat-E',
        input: [
          { role: 'user', content: 'What is the weather in Oslo?' },
          ...first.output.filter((o) => o.type !== 'message'),
          { type: 'function_call_output', call_id: call.call_id, output: '{"temp": 3}' },
        ] as never,
        tools: [tool],
      });
      assert.ok(second.output.some((o) => o.type === 'message'));
      // Streamed calls arrive as function_call_arguments events.
      const streamed = client.responses.stream({
        model: 'chat-F',
        input: 'weather?',
        tools: [tool],
        tool_choice: { type: 'function', name: 'get_weather' },
      });
      let argDeltas = '';
      streamed.on('response.function_call_arguments.delta', (e) => {
        argDeltas += e.delta;
      });
      const fin = await streamed.finalResponse();
      const sc = fin.output.find((o) => o.type === 'function_call');
      assert.ok(sc && sc.type === 'function_call');
      assert.equal(sc.arguments, argDeltas);
      // Structured output through text.format.
      const schema = {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' } },
        required: ['name', 'age'],
        additionalProperties: false,
      };
      const structured = await client.responses.create({
        model: 'chat-F',
        input: 'A person',
        text: { format: { type: 'json_schema', name: 'person', schema, strict: true } },
      });
      const person = JSON.parse(structured.output_text) as { name: unknown; age: unknown };
      assert.equal(typeof person.name, 'string');
      assert.ok(Number.isInteger(person.age));
      assert.equal(structured.text?.format?.type, 'json_schema');
      const obj = await client.responses.create({
        model: 'chat-E',
        input: 'JSON please',
        text: { format: { type: 'json_object' } },
      });
      assert.equal(typeof JSON.parse(obj.output_text), 'object');
    });

    it('item_reference: output items are kept for the member (unless store: false) and resolved', async () => {
      const first = await client.responses.create({ model: 'chat-E', input: 'Hello' });
      const storeOf = (r: unknown) => (r as { store?: boolean }).store;
      assert.equal(storeOf(first), true);
      const [reasoning, message] = first.output;
      assert.ok(reasoning && message);
      const next = await client.responses.create({
        model: 'chat-E',
        input: [
          { role: 'user', content: 'Hello' },
          { type: 'item_reference', id: reasoning.id },
          { type: 'item_reference', id: message.id },
          { role: 'user', content: 'And now?' },
        ] as never,
      });
      assert.ok(
        (next.usage?.input_tokens ?? 0) > (first.usage?.input_tokens ?? 0),
        'the referenced items are part of the prompt',
      );
      await bad(
        client.responses.create({
          model: 'chat-E',
          input: [{ type: 'item_reference', id: 'msg_unknown' }] as never,
        }),
        'input[0].id',
        /not found/,
      );
      // Another member cannot reference them; store: false keeps nothing.
      await bad(
        premium.responses.create({
          model: 'chat-E',
          input: [{ type: 'item_reference', id: message.id }] as never,
        }),
        'input[0].id',
      );
      const unkept = await client.responses.create({ model: 'chat-F', input: 'Hi', store: false });
      assert.equal(storeOf(unkept), false);
      await bad(
        client.responses.create({
          model: 'chat-F',
          input: [{ type: 'item_reference', id: unkept.output[0]?.id }] as never,
        }),
        'input[0].id',
      );
      // Streamed answers are kept before the terminal event reaches the client.
      const streamed = await client.responses.stream({ model: 'chat-F', input: 'Hi' }).finalResponse();
      const ref = await client.responses.create({
        model: 'chat-F',
        input: [{ type: 'item_reference', id: streamed.output[0]?.id }] as never,
      });
      assert.equal(ref.status, 'completed');
    });

    it('400s naming unsupported fields and the rules of tools and text.format', async () => {
      // previous_response_id is supported (stored responses): an id this member never stored is a 404
      // naming the field (test/integration/responses-agents.spec.ts covers the conversation).
      const missing = await apiError(
        client.responses.create({ model: 'chat-E', input: 'x', previous_response_id: 'resp_1' }),
      );
      assert.equal(missing.status, 404);
      assert.equal(missing.param, 'previous_response_id');
      // Input items that are not objects are refused by the validator, also on a continued conversation.
      for (const previous_response_id of [undefined, 'resp_1']) {
        const e = await apiError(
          client.responses.create({ model: 'chat-E', input: [null] as never, previous_response_id }),
        );
        assert.equal(e.status, 400, e.message);
        assert.match(String(e.param), /^input/);
      }
      await bad(
        // web_search is run by the platform (responses-web-search.spec.ts); file_search is not offered.
        client.responses.create({
          model: 'chat-E',
          input: 'x',
          tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }],
        } as never),
        'tools[0].type',
      );
      await bad(
        client.responses.create({ model: 'chat-E', input: 'x', tool_choice: 'required' }),
        'tool_choice',
      );
      await bad(
        client.responses.create({
          model: 'chat-E',
          input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }],
        }),
        'input[0].call_id',
      );
    });

    it('400s: other models (param model), empty or missing input, bad max_output_tokens, images where they do not belong', async () => {
      for (const model of ['chat-A', 'chat-C'])
        await bad(client.responses.create({ model, input: 'x' }), 'model', /responses/);
      await bad(client.responses.create({ model: 'chat-E', input: [] }), 'input');
      await bad(client.responses.create({ model: 'chat-E' } as never), 'input');
      await bad(
        client.responses.create({ model: 'chat-E', input: 'x', max_output_tokens: 0 }),
        'max_output_tokens',
      );
      await bad(
        client.responses.create({ model: 'chat-E', input: 'x', max_output_tokens: 131_072 }),
        'input',
        /131072/,
      );
      await bad(
        client.responses.create({
          model: 'chat-E',
          input: [
            {
              role: 'user',
              content: [{ type: 'input_image', image_url: 'http://10.1.2.3/x.png', detail: 'auto' }],
            },
          ],
        }),
        'input[0].content[0].image_url',
        /public address/,
      );
      await bad(
        client.responses.create({
          model: 'chat-E',
          input: [
            { role: 'system', content: [{ type: 'input_image', image_url: PNG_URI, detail: 'auto' }] },
          ] as never,
        }),
        'input[0].content[0]',
      );
    });
  });
});
