import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  type ApiError,
  type CatalogEntry,
  CatalogEntrySchema,
  type ChatCompletion,
  type ChatCompletionChunk,
  ChatCompletionChunkSchema,
  type ChatCompletionRequest,
  ChatCompletionSchema,
  type ServiceRequest,
} from '@infer/contracts';
import { connectNats, type NatsConnection, RpcClient } from '@infer/rpc';
import { type ChatService, startChatService } from '../app.js';
import { countPromptTokens } from '../tokens.js';
import { toEngineInput } from './engine-input.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const dec = new TextDecoder();

function model(
  opts: { id?: string; reasoning?: string; engine?: Record<string, unknown> } = {},
): CatalogEntry {
  return CatalogEntrySchema.parse({
    id: opts.id ?? 'chat-sim',
    kind: 'chat',
    rank: 1,
    tiers: ['inference'],
    capabilities: { streaming: true, tools: true, reasoning: opts.reasoning ?? 'none' },
    engine: { type: 'simulator', default_output_tokens: 12, reasoning_tokens: 5, ...opts.engine },
  });
}

const ask = (extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model: 'chat-sim',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Tell me a story about a river, please.' },
  ],
  ...extra,
});

const envelope = (
  m: CatalogEntry,
  body: ChatCompletionRequest,
  deadlineMs = 10_000,
): ServiceRequest<ChatCompletionRequest> => ({
  requestId: randomUUID(),
  memberId: 'member-1',
  keyId: 'key-1',
  model: m,
  body,
  deadline: Date.now() + deadlineMs,
  stream: body.stream === true,
});

const promptTokens = (m: CatalogEntry, body: ChatCompletionRequest) => {
  const input = toEngineInput(body, m);
  return countPromptTokens(input.messages, input.tools);
};

describe('chat completions handler over NATS', () => {
  let svc: ChatService;
  let nc: NatsConnection;
  let client: RpcClient;

  before(async () => {
    svc = await startChatService({
      env: { NATS_URL, LOG_LEVEL: 'silent' },
      subjectPrefix: `test.${randomUUID()}.`,
    });
    nc = await connectNats(NATS_URL, 'chat-handler-spec');
    client = new RpcClient(nc);
  });
  after(async () => {
    await nc.close();
    await svc.stop();
  });

  const call = async (m: CatalogEntry, body: ChatCompletionRequest, deadlineMs?: number) => {
    const end = await client.call(svc.subjects.chatCompletions, envelope(m, body, deadlineMs), {
      idleTimeoutMs: 5000,
    });
    return { end, completion: ChatCompletionSchema.parse(end.data) as ChatCompletion };
  };
  const stream = async (m: CatalogEntry, body: ChatCompletionRequest) => {
    const st = client.stream(svc.subjects.chatCompletions, envelope(m, { ...body, stream: true }), {
      idleTimeoutMs: 5000,
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const raw of st) chunks.push(ChatCompletionChunkSchema.parse(JSON.parse(dec.decode(raw))));
    return { chunks, end: await st.end };
  };
  const textOf = (
    chunks: ChatCompletionChunk[],
    index = 0,
    field: 'content' | 'reasoning_content' = 'content',
  ) =>
    chunks
      .flatMap((c) => c.choices)
      .filter((c) => c.index === index)
      .map((c) => c.delta[field] ?? '')
      .join('');

  it('answers a unary request with a ChatCompletion and exact usage', async () => {
    const m = model();
    const body = ask();
    const before = Math.floor(Date.now() / 1000);
    const { end, completion } = await call(m, body);
    assert.match(completion.id, /^chatcmpl-[A-Za-z0-9_-]{8,}$/);
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'chat-sim');
    assert.ok(completion.created >= before && completion.created <= Date.now() / 1000 + 1);
    assert.equal(completion.choices.length, 1);
    const [choice] = completion.choices;
    assert.equal(choice?.index, 0);
    assert.equal(choice?.finish_reason, 'stop');
    assert.equal(choice?.message.role, 'assistant');
    assert.ok(typeof choice?.message.content === 'string' && choice.message.content.length > 0);
    assert.equal(choice?.message.reasoning_content, undefined);
    assert.equal(choice?.message.tool_calls, undefined);
    const prompt = promptTokens(m, body);
    assert.deepEqual(completion.usage, {
      prompt_tokens: prompt,
      completion_tokens: 12,
      total_tokens: prompt + 12,
    });
    assert.deepEqual(end.usage, completion.usage);
    const again = await call(m, body);
    assert.notEqual(again.completion.id, completion.id, 'a new id per response');
  });

  it('streams chunks: role first, shared id and created, finish_reason only on the last', async () => {
    const m = model();
    const { chunks, end } = await stream(m, ask());
    assert.ok(chunks.length >= 14, `role + 12 tokens + finish, got ${chunks.length}`);
    const first = chunks[0];
    assert.deepEqual(first?.choices[0]?.delta, { role: 'assistant', content: '' });
    assert.equal(chunks.filter((c) => c.choices[0]?.delta.role).length, 1, 'role only once');
    for (const c of chunks) {
      assert.equal(c.id, first?.id);
      assert.equal(c.created, first?.created);
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.model, 'chat-sim');
      assert.equal(c.usage, undefined, 'no usage field without include_usage');
    }
    const last = chunks.at(-1);
    assert.deepEqual(last?.choices[0]?.delta, {});
    assert.equal(last?.choices[0]?.finish_reason, 'stop');
    assert.ok(chunks.slice(0, -1).every((c) => c.choices[0]?.finish_reason === null));
    const unary = await call(m, ask());
    assert.equal(textOf(chunks), unary.completion.choices[0]?.message.content, 'same text as unary');
    assert.deepEqual(end.usage, unary.completion.usage);
    assert.equal(end.data, undefined);
  });

  it('adds a usage chunk with choices [] when stream_options.include_usage is set', async () => {
    const m = model();
    const body = ask({ stream_options: { include_usage: true } });
    const { chunks, end } = await stream(m, body);
    const last = chunks.at(-1);
    assert.deepEqual(last?.choices, []);
    const prompt = promptTokens(m, body);
    assert.deepEqual(last?.usage, {
      prompt_tokens: prompt,
      completion_tokens: 12,
      total_tokens: prompt + 12,
    });
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
    assert.equal(chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(end.usage, last?.usage);
  });

  it('applies each reasoning mode', async () => {
    const cases: [string, Partial<ChatCompletionRequest>, boolean][] = [
      ['effort', {}, true],
      ['effort', { reasoning_effort: 'low' }, true],
      ['always', { chat_template_kwargs: { enable_thinking: false } }, true],
      ['fixed_on', {}, true],
      ['default_on', {}, true],
      ['default_on', { chat_template_kwargs: { enable_thinking: false } }, false],
      ['default_off', {}, false],
      ['default_off', { chat_template_kwargs: { enable_thinking: true } }, true],
      ['none', {}, false],
    ];
    for (const [reasoning, extra, reasons] of cases) {
      const what = `${reasoning} ${JSON.stringify(extra)}`;
      const { completion } = await call(model({ reasoning }), ask(extra));
      const msg = completion.choices[0]?.message;
      assert.equal(
        typeof msg?.reasoning_content === 'string' && msg.reasoning_content.length > 0,
        reasons,
        what,
      );
      assert.equal(
        completion.usage.completion_tokens,
        reasons ? 17 : 12,
        `${what}: reasoning tokens are completion tokens`,
      );
    }
    await assert.rejects(
      call(model({ reasoning: 'none' }), ask({ reasoning_effort: 'high' })),
      (e: ApiError) => e.status === 400 && e.param === 'reasoning_effort',
    );
  });

  it('streams reasoning_content deltas before the content', async () => {
    const { chunks, end } = await stream(model({ reasoning: 'default_on' }), ask());
    const kinds = chunks.slice(1, -1).map((c) => (c.choices[0]?.delta.reasoning_content ? 'r' : 'c'));
    assert.equal(kinds.join(''), `${'r'.repeat(5)}${'c'.repeat(12)}`);
    assert.ok(textOf(chunks, 0, 'reasoning_content').length > 0);
    assert.equal(end.usage.completion_tokens, 17);
  });

  it('runs n choices: indexes 0..n-1, prompt counted once, completions summed', async () => {
    const m = model();
    const body = ask({ n: 2 });
    const { completion } = await call(m, body);
    assert.deepEqual(
      completion.choices.map((c) => c.index),
      [0, 1],
    );
    assert.notEqual(completion.choices[0]?.message.content, completion.choices[1]?.message.content);
    const prompt = promptTokens(m, body);
    assert.deepEqual(completion.usage, {
      prompt_tokens: prompt,
      completion_tokens: 24,
      total_tokens: prompt + 24,
    });

    const { chunks, end } = await stream(m, { ...body, stream_options: { include_usage: true } });
    for (const index of [0, 1]) {
      const mine = chunks.flatMap((c) => c.choices).filter((c) => c.index === index);
      assert.deepEqual(mine[0]?.delta, { role: 'assistant', content: '' });
      assert.equal(mine.at(-1)?.finish_reason, 'stop');
      assert.equal(mine.filter((c) => c.finish_reason !== null).length, 1);
      assert.equal(textOf(chunks, index), completion.choices[index]?.message.content);
    }
    assert.deepEqual(end.usage, completion.usage);
    assert.deepEqual(chunks.at(-1)?.usage, completion.usage);
  });

  it('returns tool calls with content null, and streams them as tool_calls deltas', async () => {
    const m = model();
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'lookup',
          parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        },
      },
    ];
    const body = ask({ tools, tool_choice: 'required' });
    const { completion } = await call(m, body);
    const choice = completion.choices[0];
    assert.equal(choice?.finish_reason, 'tool_calls');
    assert.equal(choice?.message.content, null);
    const tc = choice?.message.tool_calls?.[0];
    assert.equal(tc?.type, 'function');
    assert.equal(tc?.function.name, 'lookup');
    assert.match(tc?.id ?? '', /^call_/);
    assert.equal(typeof JSON.parse(tc?.function.arguments ?? '').q, 'string');

    const { chunks } = await stream(m, body);
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    assert.deepEqual(deltas[0], {
      index: 0,
      id: tc?.id,
      type: 'function',
      function: { name: 'lookup', arguments: '' },
    });
    assert.ok(deltas.slice(1).every((d) => d.id === undefined && d.function?.name === undefined));
    assert.equal(deltas.map((d) => d.function?.arguments ?? '').join(''), tc?.function.arguments);
    assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'tool_calls');
  });

  it('honours max_tokens and stop', async () => {
    const m = model();
    const { completion } = await call(m, ask({ max_tokens: 30 }));
    assert.equal(completion.choices[0]?.finish_reason, 'length');
    assert.equal(completion.usage.completion_tokens, 30);
    const text = completion.choices[0]?.message.content ?? '';
    const stop = ` ${text.split(' ')[3]}`;
    const stopped = await call(m, ask({ max_tokens: 30, stop }));
    assert.equal(stopped.completion.choices[0]?.finish_reason, 'stop');
    assert.equal(stopped.completion.choices[0]?.message.content, text.slice(0, text.indexOf(stop)));
  });

  it('fit_max_tokens (Messages front door): a cap beyond the context is lowered to what it leaves, not a 400', async () => {
    const m = CatalogEntrySchema.parse({ ...model(), context_window: 40 });
    const prompt = promptTokens(m, ask());
    await assert.rejects(call(m, ask({ max_tokens: 128_000 })), (e: ApiError) => e.status === 400);
    const fitted = await call(m, {
      ...ask({ max_tokens: 128_000 }),
      fit_max_tokens: true,
    } as ChatCompletionRequest);
    const c = fitted.completion.choices[0];
    assert.ok(c && fitted.completion.usage.completion_tokens <= 40 - prompt, 'within the window');
    // A small cap stays the cap.
    const small = await call(m, { ...ask({ max_tokens: 3 }), fit_max_tokens: true } as ChatCompletionRequest);
    assert.equal(small.completion.usage.completion_tokens, 3);
    assert.equal(small.completion.choices[0]?.finish_reason, 'length');
  });

  it('stops generating when the client cancels and still reports the usage of the work done', async () => {
    const m = model({ id: 'chat-slow', engine: { itl_ms: 20, default_output_tokens: 1000 } });
    const st = client.stream(svc.subjects.chatCompletions, envelope(m, ask({ stream: true })), {
      idleTimeoutMs: 5000,
    });
    let got = 0;
    for await (const _ of st) {
      if (++got === 5) st.cancel();
    }
    const t0 = performance.now();
    const end = await st.end;
    assert.ok(performance.now() - t0 < 200, 'the service answered the cancel at once');
    assert.ok(
      end.usage.completion_tokens >= 4 && end.usage.completion_tokens < 20,
      `got ${end.usage.completion_tokens}`,
    );
    assert.equal(end.usage.total_tokens, end.usage.prompt_tokens + end.usage.completion_tokens);
    assert.equal(svc.rpc.inflightCount, 0, 'no work left running');
  });

  it('answers 524 when the deadline passes', async () => {
    const m = model({ id: 'chat-late', engine: { ttft_ms: 5000 } });
    const t0 = performance.now();
    await assert.rejects(call(m, ask(), 100), (e: ApiError) => e.status === 524);
    assert.ok(performance.now() - t0 < 1000);
  });

  it('answers an unknown engine type with a clean 500 naming it', async () => {
    const m = CatalogEntrySchema.parse({ ...model(), id: 'chat-odd', engine: { type: 'warp-drive' } });
    await assert.rejects(call(m, ask()), (e: ApiError) => e.status === 500 && /'warp-drive'/.test(e.message));
  });

  it('rejects a tool_choice naming a function that is not among tools', async () => {
    const body = ask({
      tools: [{ type: 'function', function: { name: 'a' } }],
      tool_choice: { type: 'function', function: { name: 'b' } },
    });
    await assert.rejects(call(model(), body), (e: ApiError) => e.status === 400 && e.param === 'tool_choice');
  });
});
