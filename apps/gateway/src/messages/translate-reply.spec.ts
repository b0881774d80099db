import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import {
  AnthropicMessageSchema,
  AnthropicStreamEventSchema,
  type ChatCompletion,
  type ChatCompletionChunk,
} from '@infer/contracts';
import { MessagesStream, signatureOf, toAnthropicMessage } from './translate-reply.js';

const usage = { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 };

function completion(
  message: ChatCompletion['choices'][number]['message'],
  finish: 'stop' | 'length' | 'tool_calls',
): ChatCompletion {
  return {
    id: 'chatcmpl-abc',
    object: 'chat.completion',
    created: 1,
    model: 'chat-E',
    choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
    usage,
  };
}

const chunk = (
  delta: ChatCompletionChunk['choices'][number]['delta'],
  finish: 'stop' | 'length' | 'tool_calls' | null = null,
): ChatCompletionChunk => ({
  id: 'chatcmpl-abc',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'chat-E',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** The SSE text of a whole stream of chunks. */
function sse(chunks: ChatCompletionChunk[], withUsage = true): string {
  const s = new MessagesStream('claude-sonnet-4-5', 5);
  let out = '';
  for (const c of chunks) out += s.chunk(c);
  if (withUsage) out += s.chunk({ ...chunk({}), choices: [], usage });
  return out + s.end();
}

/** Parses SSE text into its events, checking each against the contract and its `event:` name. */
function events(text: string) {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((frame) => {
      const [head, data] = frame.split('\n');
      const e = AnthropicStreamEventSchema.parse(JSON.parse(String(data).slice(6)));
      assert.equal(head, `event: ${e.type}`);
      return e;
    });
}

/** The Anthropic SDK's own stream helper, reading our SSE from a fetch that answers with it. */
async function finalMessage(text: string) {
  const client = new Anthropic({
    apiKey: 'k',
    baseURL: 'http://gateway.invalid',
    fetch: async () => new Response(text, { headers: { 'content-type': 'text/event-stream' } }),
  });
  return client.messages
    .stream({ model: 'chat-E', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
    .finalMessage();
}

describe('chat result -> Message', () => {
  it('thinking, text and tool_use blocks, stop reasons and usage', () => {
    const m = toAnthropicMessage(
      completion(
        {
          role: 'assistant',
          content: 'Let me write it.',
          reasoning_content: 'plan',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'Write', arguments: '{"file_path":"/a"}' } },
          ],
        },
        'tool_calls',
      ),
      'claude-sonnet-4-5',
    );
    AnthropicMessageSchema.parse(m);
    assert.equal(m.id, 'msg_abc');
    assert.equal(m.model, 'claude-sonnet-4-5');
    assert.deepEqual(m.content, [
      { type: 'thinking', thinking: 'plan', signature: signatureOf('plan') },
      { type: 'text', text: 'Let me write it.' },
      { type: 'tool_use', id: 'call_1', name: 'Write', input: { file_path: '/a' } },
    ]);
    assert.equal(m.stop_reason, 'tool_use');
    assert.deepEqual(m.usage, {
      input_tokens: 12,
      output_tokens: 7,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    const cut = toAnthropicMessage(completion({ role: 'assistant', content: 'abc' }, 'length'), 'm');
    assert.equal(cut.stop_reason, 'max_tokens');
    assert.equal(
      toAnthropicMessage(completion({ role: 'assistant', content: 'abc' }, 'stop'), 'm').stop_reason,
      'end_turn',
    );
    const bad = toAnthropicMessage(
      completion(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } }],
        },
        'tool_calls',
      ),
      'm',
    );
    assert.deepEqual(bad.content, [{ type: 'tool_use', id: 'c', name: 'f', input: {} }]);
  });
  it('a choice ended by a stop string: stop_reason stop_sequence with the matched string; without one: end_turn, null', () => {
    const c = completion({ role: 'assistant', content: 'one two' }, 'stop');
    const choice = c.choices[0];
    assert.ok(choice);
    choice.stop_reason = '\n\nHuman:';
    const m = toAnthropicMessage(c, 'm');
    AnthropicMessageSchema.parse(m);
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, '\n\nHuman:');
    const plain = toAnthropicMessage(completion({ role: 'assistant', content: 'x' }, 'stop'), 'm');
    assert.equal(plain.stop_reason, 'end_turn');
    assert.equal(plain.stop_sequence, null);
  });
});

describe('chat chunks -> Anthropic events', () => {
  const chunks = [
    chunk({ role: 'assistant', content: '' }),
    chunk({ reasoning_content: 'think ' }),
    chunk({ reasoning_content: 'hard' }),
    chunk({ content: 'Hello' }),
    chunk({ content: ' world' }),
    chunk({
      tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'Bash', arguments: '' } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"command":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"ls"}' } }] }),
    chunk({
      tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'Read', arguments: '{}' } }],
    }),
    chunk({}, 'tool_calls'),
  ];

  it('keeps the grammar: start, ping, blocks opened and closed in turn, signature before a thinking stop, delta, stop', () => {
    const types = events(sse(chunks)).map((e) =>
      e.type === 'content_block_delta'
        ? `${e.index}:${e.delta.type}`
        : 'index' in e
          ? `${e.type}:${e.index}`
          : e.type,
    );
    assert.deepEqual(types, [
      'message_start',
      'ping',
      'content_block_start:0',
      '0:thinking_delta',
      '0:thinking_delta',
      '0:signature_delta',
      'content_block_stop:0',
      'content_block_start:1',
      '1:text_delta',
      '1:text_delta',
      'content_block_stop:1',
      'content_block_start:2',
      '2:input_json_delta',
      '2:input_json_delta',
      'content_block_stop:2',
      'content_block_start:3',
      '3:input_json_delta',
      'content_block_stop:3',
      'message_delta',
      'message_stop',
    ]);
    const delta = events(sse(chunks)).find((e) => e.type === 'message_delta');
    assert.deepEqual(delta, {
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: 7, input_tokens: 12 },
    });
  });

  it("the Anthropic SDK's stream helper rebuilds the whole message from it", async () => {
    const m = await finalMessage(sse(chunks));
    assert.equal(m.id, 'msg_abc');
    assert.equal(m.model, 'claude-sonnet-4-5');
    assert.equal(m.stop_reason, 'tool_use');
    assert.deepEqual(m.usage.input_tokens, 12);
    assert.deepEqual(m.usage.output_tokens, 7);
    assert.deepEqual(m.content, [
      { type: 'thinking', thinking: 'think hard', signature: signatureOf('think hard') },
      { type: 'text', text: 'Hello world' },
      { type: 'tool_use', id: 'call_1', name: 'Bash', input: { command: 'ls' } },
      { type: 'tool_use', id: 'call_2', name: 'Read', input: {} },
    ]);
  });

  it('a stream cut at max_tokens, one with no content, and text with JSON-special characters', async () => {
    const cut = await finalMessage(sse([chunk({ content: 'a "quoted"\nline \u2028' }), chunk({}, 'length')]));
    assert.equal(cut.stop_reason, 'max_tokens');
    assert.deepEqual(cut.content, [{ type: 'text', text: 'a "quoted"\nline \u2028' }]);
    const empty = await finalMessage(sse([], false));
    assert.deepEqual(empty.content, []);
    assert.equal(empty.stop_reason, 'end_turn');
  });

  it('a stream a stop string ended: message_delta names it, and the SDK helper reports it', async () => {
    const end = { ...chunk({}, 'stop') };
    const choice = end.choices[0];
    assert.ok(choice);
    choice.stop_reason = 'END "now"';
    const text = sse([chunk({ content: 'one two' }), end]);
    const delta = events(text).find((e) => e.type === 'message_delta');
    assert.deepEqual(delta?.type === 'message_delta' && delta.delta, {
      stop_reason: 'stop_sequence',
      stop_sequence: 'END "now"',
    });
    const m = await finalMessage(text);
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, 'END "now"');
  });

  it('a failure after the start is an error event the SDK raises', async () => {
    const s = new MessagesStream('m', 1);
    const text =
      s.chunk(chunk({ content: 'partial' })) + s.fail('overloaded_error', 'The model service is overloaded.');
    const [err] = events(text).filter((e) => e.type === 'error');
    assert.deepEqual(err, {
      type: 'error',
      error: { type: 'overloaded_error', message: 'The model service is overloaded.' },
    });
    await assert.rejects(finalMessage(text), /overloaded/);
  });
});
