/**
 * The Anthropic Messages front door (POST /v1/messages, /v1/messages/count_tokens) through the real
 * stack, driven by the official `@anthropic-ai/sdk`: create, stream with the helper's finalMessage, a
 * tools round trip, count_tokens, model aliases, GET /v1/models in Anthropic's shape, a 429 that the
 * SDK retries, a 401, and the usage ledger (one row per request, endpoint /v1/messages). Models are the
 * default catalog's simulators and the scripted engine (test/support/scripted-upstream.ts), both test
 * doubles named as such.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { parse } from 'yaml';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import {
  lastToolOutput,
  type ScriptedUpstream,
  scriptedModel,
  startScriptedUpstream,
} from '../support/scripted-upstream.js';
import { waitFor } from '../support/wait-for.js';
import { type Stack, startStack, startStackLedger } from './harness.js';
import { newKey } from './limits-support.js';

describe('Anthropic Messages API with @anthropic-ai/sdk', () => {
  let up: ScriptedUpstream;
  let stack: Stack;
  let ledger: LedgerWriter;
  let dir: string;
  let client: Anthropic;
  const anthropic = (apiKey: string, opts: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}) =>
    new Anthropic({ baseURL: stack.url, apiKey, maxRetries: 0, ...opts });

  before(async () => {
    up = await startScriptedUpstream();
    dir = mkdtempSync(join(tmpdir(), 'messages-'));
    const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as {
      models: Array<Record<string, unknown>>;
    };
    // chat-F slowed down (a simulator, test double): the 429 test holds its one concurrency slot.
    for (const m of catalog.models)
      if (m.id === 'chat-F') m.engine = { type: 'simulator', ttft_ms: 3000, itl_ms: 0 };
    // chat-slow: chat-E with 350 ms between tokens (a simulator, test double), for the keep-alive pings.
    const chatE = catalog.models.find((m) => m.id === 'chat-E');
    catalog.models.push(
      {
        ...chatE,
        id: 'chat-slow',
        aliases: [],
        rank: 999,
        engine: { type: 'simulator', ttft_ms: 0, itl_ms: 350, default_output_tokens: 6 },
      },
      {
        ...scriptedModel(up, 'scripted-think', 'think', { reasoning: 'default_on' }),
        aliases: ['claude-test-thinker'],
      },
      scriptedModel(up, 'scripted-tools', 'tools'),
    );
    const catalogFile = join(dir, 'models.json');
    writeFileSync(catalogFile, JSON.stringify(catalog));
    stack = await startStack({
      catalogFile,
      env: {
        LIMITS_ENABLED: '1',
        LIMITS_REDIS_PREFIX: `test:messages:${Date.now()}:`,
        // Keep-alive pings after 150 ms of silence, so that chat-slow's 350 ms gaps get some.
        MESSAGES_PING_INTERVAL_MS: '150',
      },
    });
    ledger = await startStackLedger(stack);
    client = anthropic(stack.keys.inference);
  });
  after(async () => {
    await ledger?.stop();
    await stack?.close();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The ledger rows of one request id, once the ledger writer has them. */
  const ledgerRows = (requestId: string) =>
    waitFor(
      `ledger row of ${requestId}`,
      async () => {
        const rows = await stack.prisma.usageEvent.findMany({ where: { requestId } });
        return rows.length ? rows : undefined;
      },
      { timeoutMs: 15_000, everyMs: 50 },
    );

  it('create by alias: a Message from the model the alias names, usage in the ledger once under /v1/messages', async () => {
    const m = await client.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Say hello.' }],
      thinking: { type: 'disabled' },
      metadata: { user_id: 'u-1' },
    });
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.equal(m.model, 'claude-sonnet-4-5');
    assert.match(m.id, /^msg_/);
    assert.equal(m.stop_reason, 'end_turn');
    const text = m.content.filter((b) => b.type === 'text');
    assert.equal(text.length, 1);
    assert.ok(text[0]?.type === 'text' && text[0].text.length > 0);
    assert.equal(
      m.content.some((b) => b.type === 'thinking'),
      false,
      'thinking disabled on chat-E (switchable)',
    );
    assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
    const requestId = m._request_id;
    assert.ok(requestId);
    const rows = await ledgerRows(requestId);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.endpoint, '/v1/messages');
    assert.equal(rows[0]?.model, 'chat-E');
    assert.equal(rows[0]?.promptTokens, m.usage.input_tokens);
    assert.equal(rows[0]?.completionTokens, m.usage.output_tokens);
    assert.equal(rows[0]?.status, 200);
  });

  it('count_tokens counts what the engine then reports as input_tokens for the same request', async () => {
    const params = {
      model: 'claude-haiku-5-5',
      system: 'Count me.',
      messages: [{ role: 'user' as const, content: 'How many tokens is this sentence, roughly?' }],
      tools: [
        {
          name: 'lookup',
          description: 'look a word up',
          input_schema: { type: 'object' as const, properties: { word: { type: 'string' } } },
        },
      ],
    };
    const counted = await client.messages.countTokens(params);
    assert.ok(counted.input_tokens > 10);
    const m = await client.messages.create({ ...params, max_tokens: 8 });
    assert.equal(m.usage.input_tokens, counted.input_tokens);
  });

  it('stream: the SDK helper rebuilds thinking and text; ?beta=true (the beta client) is the same endpoint', async () => {
    up.script('think', [{ reasoning: 'The user wants a greeting.', text: 'Hello there, friend.', piece: 4 }]);
    const stream = client.beta.messages.stream({
      model: 'claude-test-thinker',
      max_tokens: 2000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'greet me' }],
      betas: ['interleaved-thinking-2025-05-14'],
    });
    const texts: string[] = [];
    stream.on('text', (t) => texts.push(t));
    const m = await stream.finalMessage();
    assert.ok(texts.length >= 3, `text deltas: ${texts.length}`);
    assert.deepEqual(
      m.content.map((b) => b.type),
      ['thinking', 'text'],
    );
    const [thinking, text] = m.content;
    assert.ok(
      thinking?.type === 'thinking' &&
        thinking.thinking === 'The user wants a greeting.' &&
        thinking.signature,
    );
    assert.ok(text?.type === 'text' && text.text === 'Hello there, friend.');
    assert.equal(m.stop_reason, 'end_turn');
    assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
    // The engine got the switch the model has (enable_thinking) and the upstream saw a streamed request.
    const seen = up.requestsFor('think').at(-1)?.body;
    assert.equal(seen?.stream, true);
    assert.deepEqual(seen?.chat_template_kwargs, { enable_thinking: true });
    const rows = await ledgerRows(String(stream.request_id));
    assert.equal(rows[0]?.endpoint, '/v1/messages');
    assert.equal(rows[0]?.model, 'scripted-think');
  });

  it('tools round trip: tool_use, then the tool_result (a content array) reaches the engine as a tool message', async () => {
    up.script('tools', [
      { text: 'Checking.', tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
      (req) => ({ text: `It is ${lastToolOutput(req)}.` }),
    ]);
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'Weather of a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.messages
      .stream({ model: 'scripted-tools', max_tokens: 500, tools, messages })
      .finalMessage();
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use?.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, { city: 'Paris' });
    messages.push({ role: 'assistant', content: first.content });
    messages.push({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'sunny, 21 C' }] },
      ],
    });
    const second = await client.messages.create({
      model: 'scripted-tools',
      max_tokens: 500,
      tools,
      messages,
      tool_choice: { type: 'auto' },
    });
    assert.deepEqual(second.content, [{ type: 'text', text: 'It is sunny, 21 C.' }]);
    const sent = up.requestsFor('tools').at(-1)?.body.messages ?? [];
    assert.deepEqual(
      sent.map((m) => m.role),
      ['user', 'assistant', 'tool'],
    );
    assert.equal(sent[1]?.tool_calls && (sent[1].tool_calls as Array<{ id: string }>)[0]?.id, use.id);
    assert.equal(up.remaining('tools'), 0);
  });

  it('stop_sequences: the answer a stop string ended says stop_sequence and names it, created and streamed', async () => {
    const ask = {
      model: 'chat-E',
      max_tokens: 40,
      thinking: { type: 'disabled' as const },
      messages: [{ role: 'user' as const, content: 'Tell me a story.' }],
    };
    const whole = await client.messages.create(ask);
    assert.equal(whole.stop_reason, 'end_turn');
    assert.equal(whole.stop_sequence, null);
    const full = whole.content.find((b) => b.type === 'text')?.text ?? '';
    const stop = ` ${full.split(' ')[4]}`;
    const cut = full.indexOf(stop);
    assert.ok(cut > 0, full);
    const stop_sequences = ['NEVER-THERE', stop];
    const m = await client.messages.create({ ...ask, stop_sequences });
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, stop);
    assert.deepEqual(m.content, [{ type: 'text', text: full.slice(0, cut) }]);
    const streamed = await client.messages.stream({ ...ask, stop_sequences }).finalMessage();
    assert.equal(streamed.stop_reason, 'stop_sequence');
    assert.equal(streamed.stop_sequence, stop);
    assert.deepEqual(streamed.content, m.content);
  });

  it('pings: one after message_start and keep-alives while the model is silent; the SDK rebuilds the same message', async () => {
    const ask = {
      model: 'chat-slow',
      max_tokens: 100,
      thinking: { type: 'disabled' as const },
      messages: [{ role: 'user' as const, content: 'Say something slowly.' }],
    };
    // On the wire: the event names in order.
    const res = await fetch(`${stack.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': stack.keys.inference,
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ ...ask, stream: true }),
    });
    assert.equal(res.status, 200);
    const names = [...(await res.text()).matchAll(/^event: (\w+)$/gm)].map((x) => x[1]);
    assert.deepEqual(names.slice(0, 2), ['message_start', 'ping']);
    assert.equal(names.at(-1), 'message_stop');
    const firstDelta = names.indexOf('content_block_delta');
    const idle = names.slice(firstDelta).filter((n) => n === 'ping').length;
    assert.ok(idle >= 1, `keep-alive pings between the deltas: ${names.join(',')}`);
    // Through the SDK: pings are ignored and the final message equals the unary answer.
    const streamed = await client.messages.stream(ask).finalMessage();
    const unary = await client.messages.create(ask);
    assert.deepEqual(streamed.content, unary.content);
    assert.equal(streamed.stop_reason, unary.stop_reason);
    assert.equal(streamed.usage.output_tokens, unary.usage.output_tokens);
  });

  it("GET /v1/models answers in Anthropic's list shape to the SDK, and retrieves by alias", async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      assert.equal(model.type, 'model');
      assert.match(model.created_at, /^\d{4}-\d\d-\d\dT/);
      ids.push(model.id);
    }
    assert.ok(ids.includes('chat-E') && !ids.includes('chat-G'), ids.join(','));
    const one = await client.models.retrieve('claude-opus-5-5');
    assert.equal(one.id, 'chat-E');
  });

  it("errors come in Anthropic's shape: 401, 404, 400 naming the field", async () => {
    await assert.rejects(
      anthropic('sk-not-a-key').messages.create({
        model: 'chat-E',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
      (e: unknown) => {
        assert.ok(e instanceof Anthropic.AuthenticationError);
        assert.equal(e.status, 401);
        assert.deepEqual(Object.keys(e.error as object).sort(), ['error', 'request_id', 'type']);
        assert.equal((e.error as { error: { type: string } }).error.type, 'authentication_error');
        assert.ok(e.requestID);
        return true;
      },
    );
    await assert.rejects(
      client.messages.create({
        model: 'claude-nope',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
      (e: unknown) => e instanceof Anthropic.NotFoundError && /claude-nope/.test(e.message),
    );
    await assert.rejects(
      client.messages.create({ model: 'chat-E', max_tokens: 0, messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) =>
        e instanceof Anthropic.BadRequestError &&
        (e.error as { error: { type: string } }).error.type === 'invalid_request_error' &&
        /max_tokens/.test(e.message),
    );
    // A premium-only model for an inference key: our 401 (the key does not reach the model), in Anthropic's shape.
    await assert.rejects(
      client.messages.create({ model: 'chat-G', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof Anthropic.AuthenticationError && /chat-G/.test(e.message),
    );
  });

  it('a 429 names the limit and carries retry-after; the SDK retries it and succeeds once the slot frees', async () => {
    const k = await newKey(stack, 'inference', { key: { concurrent: 1 } });
    const statuses: number[] = [];
    const counting = anthropic(k.key, {
      maxRetries: 8,
      fetch: async (url, init) => {
        const r = await fetch(url, init);
        statuses.push(r.status);
        return r;
      },
    });
    // Holds the key's one slot for about 3 s (chat-F's simulator waits before its first token).
    const holding = anthropic(k.key).messages.create({
      model: 'claude-haiku-5-5',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hold' }],
    });
    // Until the holding request has its slot, a quick one still gets through: ask until one is refused.
    const refused = await waitFor(
      'a 429 while the slot is held',
      () =>
        anthropic(k.key)
          .messages.create({ model: 'chat-E', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
          .then(
            () => undefined,
            (e: unknown) => e,
          ),
      { timeoutMs: 2500, everyMs: 20 },
    );
    assert.ok(refused instanceof Anthropic.RateLimitError, String(refused));
    assert.equal(refused.status, 429);
    assert.equal((refused.error as { error: { type: string } }).error.type, 'rate_limit_error');
    assert.match(refused.message, /concurren/i);
    assert.ok(Number(refused.headers?.get('retry-after')) >= 1);
    const retried = await counting.messages.create({
      model: 'chat-E',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    await holding;
    assert.equal(retried.type, 'message');
    assert.equal(statuses.at(-1), 200);
    assert.ok(statuses.includes(429), `statuses: ${statuses.join(',')}`);
  });
});
