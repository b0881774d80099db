import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseCompletedEventSchema, ResponseObjectSchema, ResponseRequestSchema } from './responses.js';
import { rejectParam } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

describe('ResponseRequestSchema', () => {
  it('accepts a string input with instructions and sampling', () => {
    const r = parseOrThrow(ResponseRequestSchema, {
      model: 'chat-E',
      input: 'Tell me a joke',
      instructions: 'You are funny.',
      max_output_tokens: 100,
      temperature: 0.6,
      top_p: 0.95,
      stream: true,
    });
    assert.equal(r.input, 'Tell me a joke');
    assert.equal(r.max_output_tokens, 100);
    assert.equal(r.stream, true);
  });

  it('accepts message items with and without type: message, every role and part type', () => {
    const r = parseOrThrow(ResponseRequestSchema, {
      model: 'chat-F',
      input: [
        { role: 'developer', content: 'be brief' },
        { role: 'system', content: [{ type: 'input_text', text: 'sys' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'what is in this picture?' },
            { type: 'input_image', image_url: 'https://example.com/cat.png' },
          ],
        },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'A cat.', annotations: [] }],
        },
      ],
    });
    assert.ok(Array.isArray(r.input));
    assert.equal(r.input.length, 4);
    assert.equal('id' in (r.input[3] ?? {}), false, 'unknown item fields are stripped');
  });

  it('names the offending field', () => {
    const m = 'chat-E';
    assert.equal(rejectParam(ResponseRequestSchema, { model: m }), 'input');
    assert.equal(rejectParam(ResponseRequestSchema, { input: 'x' }), 'model');
    assert.equal(rejectParam(ResponseRequestSchema, { model: m, input: [] }), 'input');
    assert.equal(rejectParam(ResponseRequestSchema, { model: m, input: 42 }), 'input');
    assert.equal(
      rejectParam(ResponseRequestSchema, { model: m, input: [{ role: 'bot', content: 'x' }] }),
      'input[0].role',
    );
    assert.equal(
      rejectParam(ResponseRequestSchema, {
        model: m,
        input: [{ type: 'function_call', role: 'user', content: 'x' }],
      }),
      'input[0].type',
    );
    assert.equal(
      rejectParam(ResponseRequestSchema, {
        model: m,
        input: [{ role: 'user', content: [{ type: 'input_audio', data: 'x' }] }],
      }),
      'input[0].content[0].type',
    );
    assert.equal(
      rejectParam(ResponseRequestSchema, {
        model: m,
        input: [{ role: 'user', content: [{ type: 'input_image' }] }],
      }),
      'input[0].content[0].image_url',
    );
    assert.equal(
      rejectParam(ResponseRequestSchema, { model: m, input: 'x', max_output_tokens: 0 }),
      'max_output_tokens',
    );
    assert.equal(
      rejectParam(ResponseRequestSchema, { model: m, input: 'x', max_output_tokens: 2.5 }),
      'max_output_tokens',
    );
    assert.equal(rejectParam(ResponseRequestSchema, { model: m, input: 'x', temperature: 3 }), 'temperature');
    assert.equal(rejectParam(ResponseRequestSchema, { model: m, input: 'x', top_p: 2 }), 'top_p');
  });

  it('strips Responses options it does not support', () => {
    const r = parseOrThrow(ResponseRequestSchema, { model: 'chat-E', input: 'x', store: false, tools: [] });
    assert.deepEqual(Object.keys(r).sort(), ['input', 'model']);
  });
});

const response = {
  id: 'resp_1',
  object: 'response',
  created_at: 1_700_000_000,
  model: 'chat-E',
  status: 'completed',
  output: [
    { id: 'rs_1', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'think' }] },
    {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Hello', annotations: [] }],
    },
  ],
  usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12 },
};

describe('ResponseObject and response.completed', () => {
  it('parses reasoning followed by message', () => {
    const r = ResponseObjectSchema.parse(response);
    assert.equal(r.output[0]?.type, 'reasoning');
    assert.equal(r.output[1]?.type, 'message');
  });

  it('refuses a wrong object type, an unknown item type and a non-assistant message', () => {
    assert.equal(ResponseObjectSchema.safeParse({ ...response, object: 'chat.completion' }).success, false);
    assert.equal(
      ResponseObjectSchema.safeParse({ ...response, output: [{ id: 'x', type: 'function_call' }] }).success,
      false,
    );
    const userMsg = { ...response.output[1], role: 'user' };
    assert.equal(ResponseObjectSchema.safeParse({ ...response, output: [userMsg] }).success, false);
    assert.equal(ResponseObjectSchema.safeParse({ ...response, usage: { input_tokens: 1 } }).success, false);
  });

  it('parses the terminal event with and without sequence_number', () => {
    const e = ResponseCompletedEventSchema.parse({ type: 'response.completed', response });
    assert.equal(e.response.status, 'completed');
    assert.equal(
      ResponseCompletedEventSchema.parse({ type: 'response.completed', response, sequence_number: 3 })
        .sequence_number,
      3,
    );
    assert.equal(
      ResponseCompletedEventSchema.safeParse({ type: 'response.created', response }).success,
      false,
    );
  });
});
