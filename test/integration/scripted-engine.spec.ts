/**
 * The scripted engine (test/support/scripted-upstream.ts, a test double) through the real stack: its
 * scripted turns (reasoning, text, tool calls) reach the client through the `openai` upstream engine,
 * streamed and not, and the requests it records show what the client sent back.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import {
  lastToolOutput,
  type ScriptedUpstream,
  scriptedModel,
  startScriptedUpstream,
} from '../support/scripted-upstream.js';
import { type Stack, startStack } from './harness.js';

describe('scripted engine (test double) through the gateway', () => {
  let up: ScriptedUpstream;
  let stack: Stack;
  let dir: string;
  let client: OpenAI;

  before(async () => {
    up = await startScriptedUpstream();
    dir = mkdtempSync(join(tmpdir(), 'scripted-'));
    const catalogFile = join(dir, 'models.json');
    writeFileSync(
      catalogFile,
      JSON.stringify({
        models: [
          scriptedModel(up, 'scripted-a', 'a', { reasoning: 'default_on' }),
          scriptedModel(up, 'scripted-b', 'b'),
        ],
      }),
    );
    stack = await startStack({ catalogFile });
    client = stack.client('inference');
  });
  after(async () => {
    await stack?.close();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const tools: OpenAI.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'exec_command',
        parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
      },
    },
  ];

  it('plays a tool call, then answers from the tool output the client sent back (chat, not streamed)', async () => {
    up.script('a', [
      {
        reasoning: 'I should run it.',
        tool_calls: [{ name: 'exec_command', arguments: { cmd: 'echo hi' } }],
      },
      (req) => ({ text: `done: ${lastToolOutput(req)}` }),
    ]);
    const first = await client.chat.completions.create({
      model: 'scripted-a',
      messages: [{ role: 'user', content: 'say hi' }],
      tools,
    });
    const msg = first.choices[0]?.message;
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.equal((msg as unknown as { reasoning_content?: string }).reasoning_content, 'I should run it.');
    const call = msg?.tool_calls?.[0];
    assert.ok(call && call.type === 'function');
    assert.equal(call.function.name, 'exec_command');
    assert.deepEqual(JSON.parse(call.function.arguments), { cmd: 'echo hi' });
    const second = await client.chat.completions.create({
      model: 'scripted-a',
      messages: [
        { role: 'user', content: 'say hi' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'hi\n' },
      ],
      tools,
    });
    assert.equal(second.choices[0]?.message.content, 'done: hi\n');
    const seen = up.requestsFor('a');
    assert.equal(seen.length, 2);
    assert.equal((seen[0]?.body.tools as unknown[] | undefined)?.length, 1);
    assert.equal(seen[1]?.body.messages?.at(-1)?.role, 'tool');
    assert.equal(up.remaining('a'), 0);
  });

  it('streams text in pieces (Responses API), and a script that ran out is an error, not a hang', async () => {
    up.script('b', [{ text: 'The quick brown fox.', piece: 3 }]);
    const stream = await client.responses.create({ model: 'scripted-b', input: 'go', stream: true });
    const deltas: string[] = [];
    let completed = '';
    for await (const e of stream) {
      if (e.type === 'response.output_text.delta') deltas.push(e.delta);
      if (e.type === 'response.completed')
        completed = e.response.output
          .flatMap((o) => (o.type === 'message' ? o.content : []))
          .map((c) => (c.type === 'output_text' ? c.text : ''))
          .join('');
    }
    assert.ok(deltas.length >= 3, `pieces: ${deltas.length}`);
    assert.equal(deltas.join(''), 'The quick brown fox.');
    assert.equal(completed, 'The quick brown fox.');
    await assert.rejects(
      client.responses.create({ model: 'scripted-b', input: 'again' }),
      (e: InstanceType<typeof OpenAI.APIError>) => {
        assert.ok((e.status ?? 0) >= 500);
        return true;
      },
    );
  });

  it('answers unstreamed requests with one ChatCompletion, and takes scripts over HTTP', async () => {
    const put = await fetch(`${up.url.replace(/\/v1$/, '')}/__script/c`, {
      method: 'PUT',
      body: JSON.stringify([{ text: 'over http', tool_calls: [{ name: 'f', arguments: '{"x":1}' }] }]),
    });
    assert.equal(put.status, 200);
    const r = await fetch(`${up.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'c', messages: [{ role: 'user', content: 'x' }] }),
    });
    const body = (await r.json()) as OpenAI.ChatCompletion;
    assert.equal(body.choices[0]?.message.content, 'over http');
    assert.equal(body.choices[0]?.message.tool_calls?.[0]?.type, 'function');
    assert.equal(body.choices[0]?.finish_reason, 'tool_calls');
    const recorded = (await (await fetch(`${up.url.replace(/\/v1$/, '')}/__requests/c`)).json()) as unknown[];
    assert.equal(recorded.length, 1);
  });
});
