/**
 * What coding agents and agent SDKs send to /v1/responses, through the real stack on the scripted
 * engine (test/support/scripted-upstream.ts, a test double): the 14 requests that ask for nothing,
 * namespace and custom tools mapped both ways, `reasoning.effort`, and reasoning sealed for stateless
 * clients (`include: ["reasoning.encrypted_content"]`) and opened when sent back.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { type ScriptedUpstream, scriptedModel, startScriptedUpstream } from '../support/scripted-upstream.js';
import { type Stack, startStack } from './harness.js';

describe('/v1/responses for agents (scripted engine)', () => {
  let up: ScriptedUpstream;
  let stack: Stack;
  let dir: string;
  let client: OpenAI;
  let other: OpenAI;

  before(async () => {
    up = await startScriptedUpstream();
    dir = mkdtempSync(join(tmpdir(), 'responses-agents-'));
    const catalogFile = join(dir, 'models.json');
    writeFileSync(
      catalogFile,
      JSON.stringify({
        models: [
          scriptedModel(up, 'agent-plain', 'plain'),
          scriptedModel(up, 'agent-think', 'think', { reasoning: 'default_on' }),
          scriptedModel(up, 'agent-tools', 'tools'),
        ],
      }),
    );
    stack = await startStack({
      catalogFile,
      env: { RESPONSES_SEAL_KEYS: `t1:${randomBytes(32).toString('base64')}` },
    });
    client = stack.client('inference');
    other = stack.client('premium');
    up.script('plain', [], { text: 'ok' });
  });
  after(async () => {
    await stack?.close();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const nothing: Array<[string, Record<string, unknown>]> = [
    ['include: [] (Agents SDK)', { include: [] }],
    [
      'null include, truncation, previous_response_id (LlamaIndex)',
      { include: null, truncation: null, previous_response_id: null },
    ],
    ['reasoning: {}', { reasoning: {} }],
    ["truncation: 'disabled'", { truncation: 'disabled' }],
    [
      'prompt_cache_key, safety_identifier, user',
      { prompt_cache_key: 'k1', safety_identifier: 'sid', user: 'u1' },
    ],
    ["client_metadata, service_tier: 'auto'", { client_metadata: { 'x-codex': '1' }, service_tier: 'auto' }],
    ['metadata: {}, store: false', { metadata: {}, store: false }],
    ["text: {verbosity: 'medium'}", { text: { verbosity: 'medium' } }],
    [
      "reasoning: {summary: 'auto', effort: 'none'} on a model that does not reason",
      { reasoning: { summary: 'auto', effort: 'none' } },
    ],
    ['tools: [], parallel_tool_calls: true', { tools: [], parallel_tool_calls: true, tool_choice: 'auto' }],
    [
      'a developer-role message',
      {
        input: [
          { role: 'developer', content: 'be terse' },
          { role: 'user', content: 'hi' },
        ],
      },
    ],
    [
      'nulls for instructions, max_output_tokens, temperature, top_p, stream_options, top_logprobs',
      {
        instructions: null,
        max_output_tokens: null,
        temperature: null,
        top_p: null,
        stream_options: null,
        top_logprobs: 0,
      },
    ],
  ];

  for (const [name, extra] of nothing) {
    it(`accepts ${name}`, async () => {
      const r = await client.responses.create({ model: 'agent-plain', input: 'hi', ...extra } as never);
      assert.equal((r as OpenAI.Responses.Response).output_text, 'ok');
    });
  }

  it('chat completions: accepts reasoning_effort: null', async () => {
    const r = await client.chat.completions.create({
      model: 'agent-plain',
      messages: [{ role: 'user', content: 'hi' }],
      reasoning_effort: null,
    });
    assert.equal(r.choices[0]?.message.content, 'ok');
  });

  it('chat completions: accepts hints and empty values (tools: [], metadata, store, verbosity, modalities)', async () => {
    const r = await client.chat.completions.create({
      model: 'agent-plain',
      messages: [
        { role: 'developer', content: 'x' },
        { role: 'user', content: 'hi' },
      ],
      tools: [],
      metadata: {},
      store: false,
      verbosity: 'low',
      modalities: ['text'],
      prompt_cache_key: 'k',
      service_tier: 'default',
      safety_identifier: 's',
    });
    assert.equal(r.choices[0]?.message.content, 'ok');
  });

  it('400s naming a field that asks for what the platform does not do', async () => {
    const bad = async (extra: Record<string, unknown>, param: string) => {
      await assert.rejects(
        client.responses.create({ model: 'agent-plain', input: 'hi', ...extra } as never),
        (e: unknown) => {
          assert.ok(e instanceof OpenAI.APIError);
          assert.equal(e.status, 400);
          assert.equal((e.error as { param?: string }).param, param);
          return true;
        },
      );
    };
    await bad({ background: true }, 'background');
    await bad({ truncation: 'auto' }, 'truncation');
    await bad({ tools: [{ type: 'file_search', vector_store_ids: [] }] }, 'tools[0].type');
    await bad({ reasoning: { effort: 'high' } }, 'reasoning.effort');
    // The hosted web_search tool runs (responses-web-search.spec.ts); domain filters are not supported.
    await bad(
      { tools: [{ type: 'web_search', filters: { allowed_domains: ['example.com'] } }] },
      'tools[0].filters',
    );
  });

  it('offers namespace functions under qualified names and maps the call back (name + namespace)', async () => {
    up.script('tools', [
      { tool_calls: [{ name: 'shell__exec', arguments: { cmd: 'ls' } }] },
      { text: 'listed' },
    ]);
    const tools = [
      {
        type: 'namespace',
        name: 'shell',
        description: 'Shell tools',
        tools: [
          {
            type: 'function',
            name: 'exec',
            parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
          },
        ],
      },
    ];
    const r = await client.responses.create({ model: 'agent-tools', input: 'list files', tools } as never);
    const call = (r as OpenAI.Responses.Response).output.find(
      (o) => o.type === 'function_call',
    ) as unknown as Record<string, unknown>;
    assert.equal(call.name, 'exec');
    assert.equal(call.namespace, 'shell');
    assert.deepEqual(JSON.parse(String(call.arguments)), { cmd: 'ls' });
    const offered = up.requestsFor('tools').at(-1)?.body.tools as Array<{ function: { name: string } }>;
    assert.deepEqual(
      offered.map((t) => t.function.name),
      ['shell__exec'],
    );
    // The call replayed with its namespace reaches the model under the qualified name.
    const second = await client.responses.create({
      model: 'agent-tools',
      tools,
      input: [
        { role: 'user', content: 'list files' },
        {
          type: 'function_call',
          call_id: String(call.call_id),
          name: 'exec',
          namespace: 'shell',
          arguments: '{"cmd":"ls"}',
        },
        { type: 'function_call_output', call_id: String(call.call_id), output: 'a.txt' },
      ],
    } as never);
    assert.equal((second as OpenAI.Responses.Response).output_text, 'listed');
    const sent = up.requestsFor('tools').at(-1)?.body.messages ?? [];
    const assistant = sent.find((m) => m.role === 'assistant') as {
      tool_calls: Array<{ function: { name: string } }>;
    };
    assert.equal(assistant.tool_calls[0]?.function.name, 'shell__exec');
    assert.equal(sent.at(-1)?.content, 'a.txt');
  });

  it('custom tools: the model gets a string-argument function, the client a custom_tool_call (streamed too)', async () => {
    up.script('tools', [
      { tool_calls: [{ name: 'apply_patch', arguments: { input: '*** Begin Patch\n*** End Patch' } }] },
      (req) => ({ text: `patched: ${String(req.body.messages?.at(-1)?.content)}` }),
    ]);
    const tools = [
      {
        type: 'custom',
        name: 'apply_patch',
        description: 'Apply a patch',
        format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' },
      },
    ];
    const stream = await client.responses.create({
      model: 'agent-tools',
      input: 'patch it',
      tools,
      stream: true,
    } as never);
    const types: string[] = [];
    let done: OpenAI.Responses.Response | undefined;
    for await (const e of stream as unknown as AsyncIterable<OpenAI.Responses.ResponseStreamEvent>) {
      types.push(e.type);
      if (e.type === 'response.completed') done = e.response;
    }
    assert.ok(types.includes('response.custom_tool_call_input.done'), types.join(','));
    const call = done?.output.find(
      (o) => o.type === 'custom_tool_call',
    ) as OpenAI.Responses.ResponseCustomToolCall;
    assert.equal(call.name, 'apply_patch');
    assert.equal(call.input, '*** Begin Patch\n*** End Patch');
    const offered = up.requestsFor('tools').at(-1)?.body.tools as Array<{
      function: { parameters: { properties: { input: { description: string } } } };
    }>;
    assert.match(offered[0]?.function.parameters.properties.input.description ?? '', /lark grammar/);
    const second = await client.responses.create({
      model: 'agent-tools',
      tools,
      input: [
        { role: 'user', content: 'patch it' },
        { type: 'custom_tool_call', call_id: call.call_id, name: 'apply_patch', input: call.input },
        { type: 'custom_tool_call_output', call_id: call.call_id, output: 'Done!' },
      ],
    } as never);
    assert.equal((second as OpenAI.Responses.Response).output_text, 'patched: Done!');
    const assistant = up
      .requestsFor('tools')
      .at(-1)
      ?.body.messages?.find((m) => m.role === 'assistant') as {
      tool_calls: Array<{ function: { arguments: string } }>;
    };
    assert.deepEqual(JSON.parse(assistant.tool_calls[0]?.function.arguments ?? ''), { input: call.input });
  });

  it('seals reasoning for stateless clients and gives it back to the model; a tampered or foreign blob is a 400', async () => {
    up.script('think', [
      { reasoning: 'The secret plan is 42.', tool_calls: [{ name: 'f', arguments: {} }] },
      { text: 'done' },
      { text: 'never' },
    ]);
    const tools = [{ type: 'function' as const, name: 'f', parameters: { type: 'object' }, strict: false }];
    const r = await client.responses.create({
      model: 'agent-think',
      input: 'go',
      tools,
      store: false,
      include: ['reasoning.encrypted_content'],
      reasoning: { summary: 'auto' },
    });
    const rs = r.output.find((o) => o.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
    assert.ok(rs.encrypted_content?.startsWith('t1.'), rs.encrypted_content ?? 'none');
    assert.ok(!rs.encrypted_content?.includes('secret'));
    const call = r.output.find(
      (o) => o.type === 'function_call',
    ) as OpenAI.Responses.ResponseFunctionToolCall;
    const replay = (blob: string) => [
      { role: 'user' as const, content: 'go' },
      { type: 'reasoning' as const, id: rs.id, summary: [], encrypted_content: blob },
      { type: 'function_call' as const, call_id: call.call_id, name: 'f', arguments: '{}' },
      { type: 'function_call_output' as const, call_id: call.call_id, output: 'ok' },
    ];
    const second = await client.responses.create({
      model: 'agent-think',
      tools,
      store: false,
      input: replay(rs.encrypted_content ?? ''),
    });
    assert.equal(second.output_text, 'done');
    const assistant = up
      .requestsFor('think')
      .at(-1)
      ?.body.messages?.find((m) => m.role === 'assistant');
    assert.equal(assistant?.reasoning_content, 'The secret plan is 42.');
    const blob = rs.encrypted_content ?? '';
    const tampered = `${blob.slice(0, -2)}${blob.endsWith('A') ? 'B' : 'A'}A`;
    for (const [c, bad] of [
      [client, tampered],
      [client, 't9.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      [other, blob],
    ] as const) {
      await assert.rejects(
        c.responses.create({ model: 'agent-think', tools, input: replay(bad) }),
        (e: unknown) => {
          assert.ok(e instanceof OpenAI.APIError);
          assert.equal(e.status, 400);
          assert.equal((e.error as { param?: string }).param, 'input[1].encrypted_content');
          return true;
        },
      );
    }
  });

  it('stores a conversation: previous_response_id continues it, retrieve / inputItems.list / delete, per member', async () => {
    up.script(
      'plain',
      [
        { text: 'Hi Ann.' },
        (req) => ({
          text: `You said: ${(req.body.messages ?? []).map((m) => String(m.content)).join(' | ')}`,
        }),
      ],
      { text: 'ok' },
    );
    const first = await client.responses.create({ model: 'agent-plain', input: 'I am Ann.' });
    const second = await client.responses.create({
      model: 'agent-plain',
      input: 'Who am I?',
      previous_response_id: first.id,
    });
    assert.equal(second.output_text, 'You said: I am Ann. | Hi Ann. | Who am I?');
    assert.equal(second.previous_response_id, first.id);
    const got = await client.responses.retrieve(second.id);
    assert.equal(got.id, second.id);
    const items = await client.responses.inputItems.list(second.id, { order: 'asc', limit: 2 });
    assert.equal(items.data.length, 2);
    assert.equal(items.has_more, true);
    const all: string[] = [];
    for await (const it of client.responses.inputItems.list(second.id, { order: 'asc', limit: 1 })) {
      all.push(it.type === 'message' ? JSON.stringify(it.content) : it.type);
    }
    assert.equal(all.length, 3);
    // Another member sees nothing of it.
    await assert.rejects(
      other.responses.retrieve(second.id),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    await assert.rejects(
      other.responses.create({ model: 'agent-plain', input: 'x', previous_response_id: first.id }),
      (e: unknown) =>
        e instanceof OpenAI.NotFoundError && (e.error as { param?: string }).param === 'previous_response_id',
    );
    // store: false keeps nothing.
    const unstored = await client.responses.create({ model: 'agent-plain', input: 'x', store: false });
    await assert.rejects(
      client.responses.retrieve(unstored.id),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    await client.responses.delete(first.id);
    await assert.rejects(
      client.responses.retrieve(first.id),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    await assert.rejects(
      client.responses.create({ model: 'agent-plain', input: 'x', previous_response_id: first.id }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
  });
});
