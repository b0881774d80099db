import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatCompletionChunkSchema, ChatCompletionRequestSchema, ChatCompletionSchema } from './chat.js';
import { CompletionRequestSchema } from './completions.js';
import { ApiError } from './errors.js';
import { rejectParam } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

const tool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('ChatCompletionRequestSchema', () => {
  it('accepts a request with tools and tool_choice', () => {
    const r = parseOrThrow(ChatCompletionRequestSchema, {
      model: 'chat-E',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'weather in Paris?' },
      ],
      tools: [tool],
      tool_choice: 'auto',
      temperature: 0.2,
    });
    assert.equal(r.tools?.[0]?.function.name, 'get_weather');
    assert.equal(r.tool_choice, 'auto');
  });

  it('accepts a forced function tool_choice', () => {
    const r = parseOrThrow(ChatCompletionRequestSchema, {
      model: 'chat-E',
      messages: [{ role: 'user', content: 'x' }],
      tools: [tool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    assert.deepEqual(r.tool_choice, { type: 'function', function: { name: 'get_weather' } });
  });

  it('accepts an assistant message with null content and tool_calls, then the tool answer', () => {
    const r = parseOrThrow(ChatCompletionRequestSchema, {
      model: 'chat-E',
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18C, sunny' },
      ],
    });
    assert.equal(r.messages.length, 3);
  });

  it('refuses an assistant message with neither content nor tool_calls', () => {
    assert.equal(
      rejectParam(ChatCompletionRequestSchema, {
        model: 'chat-E',
        messages: [{ role: 'assistant', content: null }],
      }),
      'messages[0].content',
    );
  });

  it('names messages[0].role for an unknown role', () => {
    assert.equal(
      rejectParam(ChatCompletionRequestSchema, {
        model: 'chat-E',
        messages: [{ role: 'bot', content: 'x' }],
      }),
      'messages[0].role',
    );
  });

  it('names tools[0].function.name for a bad tool name', () => {
    for (const name of ['bad name', 'a'.repeat(65), '']) {
      assert.equal(
        rejectParam(ChatCompletionRequestSchema, {
          model: 'chat-E',
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ type: 'function', function: { name } }],
        }),
        'tools[0].function.name',
      );
    }
  });

  it('accepts a 64-character tool name with dashes and underscores', () => {
    const name = `${'a'.repeat(60)}_-b1`;
    const r = parseOrThrow(ChatCompletionRequestSchema, {
      model: 'chat-E',
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name } }],
    });
    assert.equal(r.tools?.[0]?.function.name, name);
  });

  it('requires tool_call_id on a tool message', () => {
    let err: unknown;
    try {
      parseOrThrow(ChatCompletionRequestSchema, {
        model: 'chat-E',
        messages: [{ role: 'tool', content: 'result' }],
      });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ApiError);
    assert.equal(err.param, 'messages[0].tool_call_id');
    assert.match(err.message, /Missing required parameter/);
  });

  it('requires at least one message', () => {
    assert.equal(rejectParam(ChatCompletionRequestSchema, { model: 'chat-E', messages: [] }), 'messages');
  });

  it('checks sampling bounds', () => {
    const base = { model: 'chat-E', messages: [{ role: 'user', content: 'x' }] };
    assert.equal(rejectParam(ChatCompletionRequestSchema, { ...base, temperature: 2.5 }), 'temperature');
    assert.equal(rejectParam(ChatCompletionRequestSchema, { ...base, top_p: -0.1 }), 'top_p');
    assert.equal(rejectParam(ChatCompletionRequestSchema, { ...base, max_tokens: 0 }), 'max_tokens');
  });

  it('accepts image parts and strips unknown fields', () => {
    const r = parseOrThrow(ChatCompletionRequestSchema, {
      model: 'chat-A',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
      reasoning_effort: 'high',
      some_future_field: true,
    });
    assert.equal('some_future_field' in r, false);
    assert.equal(r.reasoning_effort, 'high');
  });
});

describe('logprobs (no engine reports them)', () => {
  it('400 naming logprobs / top_logprobs when asked for; false, 0 and null pass', () => {
    const base = { model: 'chat-A', messages: [{ role: 'user', content: 'hi' }] };
    assert.equal(rejectParam(ChatCompletionRequestSchema, { ...base, logprobs: true }), 'logprobs');
    assert.equal(rejectParam(ChatCompletionRequestSchema, { ...base, top_logprobs: 3 }), 'top_logprobs');
    parseOrThrow(ChatCompletionRequestSchema, { ...base, logprobs: false, top_logprobs: 0 });
    parseOrThrow(ChatCompletionRequestSchema, { ...base, logprobs: null });
    assert.equal(
      rejectParam(CompletionRequestSchema, { model: 'chat-A', prompt: 'x', logprobs: 2 }),
      'logprobs',
    );
    parseOrThrow(CompletionRequestSchema, { model: 'chat-A', prompt: 'x', logprobs: null });
  });
});

describe('ChatCompletion response schemas', () => {
  it('parses a completion with tool_calls and a streamed chunk', () => {
    const c = ChatCompletionSchema.parse({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'chat-E',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
    assert.equal(c.choices[0]?.finish_reason, 'tool_calls');
    const chunk = ChatCompletionChunkSchema.parse({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'chat-E',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }],
    });
    assert.equal(chunk.choices[0]?.delta.content, 'Hi');
  });
});
