import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ChatCompletionChunkSchema, ChatCompletionSchema } from '@infer/contracts';
import { apiError, type Stack, startStack } from './harness.js';

describe('chat completions through the gateway (openai SDK)', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.close();
  });

  it('answers a chat completion in the spec shape with exact usage', async () => {
    const res = await stack.client('inference').chat.completions.create({
      model: 'chat-F',
      messages: [{ role: 'user', content: 'Say hello' }],
      max_tokens: 5,
    });
    ChatCompletionSchema.parse(res);
    assert.equal(res.object, 'chat.completion');
    assert.equal(res.model, 'chat-F');
    assert.equal(res.choices.length, 1);
    assert.equal(res.choices[0]?.finish_reason, 'length');
    assert.equal(res.choices[0]?.message.role, 'assistant');
    assert.ok(res.choices[0]?.message.content);
    assert.equal(res.usage?.completion_tokens, 5);
    assert.equal(res.usage?.total_tokens, (res.usage?.prompt_tokens ?? 0) + 5);
  });

  it('returns the reasoning trace on a reasoning model', async () => {
    const res = await stack.client('inference').chat.completions.create({
      model: 'chat-A',
      messages: [{ role: 'user', content: 'Think first' }],
      reasoning_effort: 'high',
    });
    const msg = res.choices[0]?.message as { reasoning_content?: string };
    assert.ok(msg.reasoning_content, 'reasoning_content present');
  });

  it('streams chunks: role first, one created, finish_reason on the last content chunk, then [DONE]', async () => {
    const stream = await stack.client('inference').chat.completions.create({
      model: 'chat-F',
      messages: [{ role: 'user', content: 'Stream please' }],
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(ChatCompletionChunkSchema.parse(c));
    assert.ok(chunks.length >= 3);
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    assert.equal(new Set(chunks.map((c) => c.created)).size, 1, 'created identical across chunks');
    assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    const finishes = withChoices.map((c) => c.choices[0]?.finish_reason);
    assert.equal(finishes.at(-1), 'length');
    assert.ok(
      finishes.slice(0, -1).every((f) => f === null),
      'finish_reason null on intermediate chunks',
    );
    const text = withChoices.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.ok(text.length > 0);
    const usageChunk = chunks.at(-1);
    assert.equal(usageChunk?.choices.length, 0);
    assert.equal(usageChunk?.usage?.completion_tokens, 6);
  });

  it('frames the stream as SSE ending with data: [DONE], relayed chunk by chunk', async () => {
    const res = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.keys.community}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'chat-E',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 3,
        stream: true,
      }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.ok(res.headers.get('x-request-id'));
    const body = await res.text();
    const events = body.split('\n\n').filter(Boolean);
    assert.ok(events.every((e) => e.startsWith('data: ')));
    assert.equal(events.at(-1), 'data: [DONE]');
  });

  it('lists exactly the models each tier may use, most capable first', async () => {
    const premium = (await stack.client('premium').models.list()).data.map((m) => m.id);
    const inference = (await stack.client('inference').models.list()).data.map((m) => m.id);
    const community = (await stack.client('community').models.list()).data.map((m) => m.id);
    assert.equal(premium[0], 'chat-G');
    assert.ok(premium.includes('image-model'));
    assert.ok(!inference.includes('chat-G'));
    assert.ok(inference.includes('image-model'));
    assert.ok(!community.includes('chat-G'));
    assert.ok(!community.includes('image-model'), 'community keys cannot use image endpoints');
    assert.deepEqual(
      inference,
      premium.filter((m) => m !== 'chat-G'),
    );
    const one = await stack.client('premium').models.retrieve('chat-G');
    assert.deepEqual(Object.keys(one).sort(), ['created', 'endpoints', 'id', 'object', 'owned_by']);
    // Which endpoints serve a model is discoverable (extension field `endpoints`); every chat model also
    // answers Anthropic's Messages API.
    const endpoints = (id: string) =>
      stack
        .client('premium')
        .models.retrieve(id)
        .then((m) => (m as unknown as { endpoints: string[] }).endpoints);
    assert.deepEqual(await endpoints('chat-E'), [
      '/v1/chat/completions',
      '/v1/messages',
      '/v1/completions',
      '/v1/responses',
    ]);
    assert.deepEqual(await endpoints('chat-A'), ['/v1/chat/completions', '/v1/messages']);
    assert.deepEqual(await endpoints('chat-F'), ['/v1/chat/completions', '/v1/messages', '/v1/responses']);
    assert.deepEqual(await endpoints('embed-model'), ['/v1/embeddings']);
    const e = await apiError(stack.client('inference').models.retrieve('chat-G'));
    assert.equal(e.status, 404);
  });

  it('refuses a missing key, an unknown key and a revoked-looking key with 401 invalid_api_key', async () => {
    const res = await fetch(`${stack.baseURL}/models`);
    assert.equal(res.status, 401);
    const body = (await res.json()) as { error: Record<string, unknown> };
    assert.equal(body.error.code, 'invalid_api_key');
    assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
    const e = await apiError(stack.client('inference', { apiKey: 'sk-inf-not-a-real-key' }).models.list());
    assert.equal(e.status, 401);
    assert.equal(e.code, 'invalid_api_key');
  });

  it('records when a key was last used, off the request path', async () => {
    await stack.client('community').models.list();
    const deadline = Date.now() + 10_000;
    let used: Array<{ name: string; lastUsedAt: Date | null }> = [];
    while (Date.now() < deadline) {
      used = await stack.prisma.apiKey.findMany({ select: { name: true, lastUsedAt: true } });
      if (used.find((k) => k.name === 'it-community')?.lastUsedAt) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(used.find((k) => k.name === 'it-community')?.lastUsedAt instanceof Date);
  });

  it('gives 401 auth_error when the tier does not reach chat-G', async () => {
    const e = await apiError(
      stack
        .client('inference')
        .chat.completions.create({ model: 'chat-G', messages: [{ role: 'user', content: 'x' }] }),
    );
    assert.equal(e.status, 401);
    assert.equal(e.type, 'auth_error');
    assert.equal(e.code, 'invalid_api_key');
    assert.match(e.message, /does not have access to the requested model/);
    const ok = await stack.client('premium').chat.completions.create({
      model: 'chat-G',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 2,
    });
    assert.equal(ok.model, 'chat-G');
  });

  it('gives 404 model_not_found for an unknown model', async () => {
    const e = await apiError(
      stack
        .client('premium')
        .chat.completions.create({ model: 'gpt-nope', messages: [{ role: 'user', content: 'x' }] }),
    );
    assert.equal(e.status, 404);
    assert.equal(e.code, 'model_not_found');
    assert.equal(e.param, 'model');
  });

  it('gives 400 with param naming the first offending field', async () => {
    const c = stack.client('inference').chat.completions;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'chat-F', messages: [] }, 'messages'],
      [{ model: 'chat-F', messages: [{ role: 'user', content: 'x' }], temperature: 2.5 }, 'temperature'],
      [{ model: 'chat-F', messages: [{ role: 'user', content: 'x' }], top_p: 1.5 }, 'top_p'],
      [{ model: 'chat-F', messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }, 'max_tokens'],
      [{ model: 'chat-F', messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
      [{ model: 'chat-F', messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id'],
      [
        {
          model: 'chat-F',
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ type: 'function', function: { name: 'bad name!' } }],
        },
        'tools[0].function.name',
      ],
      [
        { model: 'chat-F', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'extreme' },
        'reasoning_effort',
      ],
      [{ messages: [{ role: 'user', content: 'x' }] }, 'model'],
    ];
    for (const [body, param] of cases) {
      const e = await apiError(c.create(body as never));
      assert.equal(e.status, 400, JSON.stringify(body));
      assert.equal(e.code, 'invalid_request_error');
      assert.equal(e.type, 'invalid_request_error');
      assert.equal(e.param, param, JSON.stringify(body));
    }
  });

  it('answers malformed JSON and unknown URLs with the Error body, never a 500', async () => {
    const headers = { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' };
    const bad = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers,
      body: '{"model":',
    });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'invalid_request_error');
    const arr = await fetch(`${stack.baseURL}/chat/completions`, { method: 'POST', headers, body: '[1,2]' });
    assert.equal(arr.status, 400);
    // Each kind of body the parsers refuse or take, with its exact answer (app.ts: Fastify's JSON parser,
    // Nest's form parser).
    const bodies: [string, string, number, Record<string, unknown>][] = [
      ['application/json', '', 400, { message: 'The request body is not valid JSON.' }],
      ['application/json', '{"__proto__":{"x":1}}', 400, {}],
      ['application/json; charset=utf-8', '{"model":"chat-A","messages":[]}', 400, { param: 'messages' }],
      ['application/x-www-form-urlencoded', 'model=chat-A', 400, { param: 'messages' }],
      ['text/plain', 'hello', 400, {}],
      ['application/xml', '<a/>', 415, { code: 'unsupported_media_type' }],
    ];
    for (const [type, body, status, fields] of bodies) {
      const res = await fetch(`${stack.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': type },
        body,
      });
      assert.equal(res.status, status, `${type} ${body}`);
      const err = ((await res.json()) as { error: Record<string, unknown> }).error;
      for (const [k, v] of Object.entries(fields)) assert.equal(err[k], v, `${type} ${body}: ${k}`);
    }
    const unknown = await fetch(`${stack.baseURL}/nothing/here`, { headers });
    assert.equal(unknown.status, 404);
    assert.ok(((await unknown.json()) as { error: unknown }).error);
  });

  it('keeps a client request id and makes one otherwise', async () => {
    const mine = await fetch(`${stack.baseURL}/models`, {
      headers: { authorization: `Bearer ${stack.keys.inference}`, 'x-request-id': 'trace-123' },
    });
    assert.equal(mine.headers.get('x-request-id'), 'trace-123');
    const made = await fetch(`${stack.baseURL}/models`, {
      headers: { authorization: `Bearer ${stack.keys.inference}` },
    });
    assert.match(made.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{24}$/);
  });

  it('serves health, readiness, metrics and the OpenAPI document', async () => {
    assert.equal((await fetch(`${stack.url}/healthz`)).status, 200);
    const ready = await fetch(`${stack.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(((await ready.json()) as { checks: unknown }).checks, {
      postgres: 'ok',
      redis: 'ok',
      nats: 'ok',
    });
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    assert.match(
      metrics,
      /gateway_http_requests_total\{route="\/v1\/chat\/completions",method="POST",status="200"\} \d+/,
    );
    assert.match(metrics, /gateway_http_request_duration_seconds_bucket/);
    // Built on the first request and served serialized: a JSON answer, the same the second time.
    const first = await fetch(`${stack.url}/openapi.json`);
    assert.equal(first.headers.get('content-type'), 'application/json; charset=utf-8');
    const text = await first.text();
    const doc = JSON.parse(text) as { openapi: string; paths: object };
    assert.equal(doc.openapi, '3.1.0');
    assert.ok('/v1/chat/completions' in doc.paths);
    assert.equal(await (await fetch(`${stack.url}/openapi.json`)).text(), text);
  });
});
