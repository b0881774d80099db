import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseCompletedEventSchema, ResponseObjectSchema, ResponseRequestSchema } from './responses.js';
import { reject400, rejectParam } from './testing/reject.js';
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
      'input[0].call_id',
    );
    assert.equal(
      rejectParam(ResponseRequestSchema, { model: m, input: [{ type: 'computer_call', role: 'user' }] }),
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

  it('accepts function tools, tool_choice, text.format, metadata, store: false and function call items', () => {
    const r = parseOrThrow(ResponseRequestSchema, {
      model: 'chat-E',
      input: [
        { role: 'user', content: 'weather?' },
        { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'hm' }] },
        { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"temp":3}' },
      ],
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' }, strict: true }],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: false,
      text: { format: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true } },
      metadata: { run: '1' },
      store: false,
    });
    assert.equal(r.tools?.[0]?.type === 'function' && r.tools[0].name, 'get_weather');
    assert.equal(r.text?.format?.type, 'json_schema');
    assert.equal(Array.isArray(r.input) && r.input.length, 4);
  });

  it('400s naming a field that asks for what the platform does not do, or that does not exist', () => {
    const m = 'chat-E';
    const bad = (extra: Record<string, unknown>) =>
      rejectParam(ResponseRequestSchema, { model: m, input: 'x', ...extra });
    assert.equal(bad({ background: true }), 'background');
    assert.equal(bad({ truncation: 'auto' }), 'truncation');
    assert.equal(bad({ conversation: 'conv_1' }), 'conversation');
    assert.equal(bad({ prompt: { id: 'pmpt_1' } }), 'prompt');
    assert.equal(bad({ include: ['message.output_text.logprobs'] }), 'include');
    assert.equal(bad({ include: ['everything'] }), 'include[0]');
    assert.equal(bad({ top_logprobs: 3 }), 'top_logprobs');
    assert.equal(bad({ context_management: [{ type: 'compaction' }] }), 'context_management');
    assert.equal(bad({ reasoning: { effort: 'extreme' } }), 'reasoning.effort');
    assert.equal(bad({ reasoning: { mode: 'pro' } }), 'reasoning.mode');
    assert.equal(bad({ store: 'yes' }), 'store');
    assert.equal(bad({ input: [{ type: 'item_reference' }] }), 'input[0].id');
    assert.equal(bad({ text: { verbosity: 'loud' } }), 'text.verbosity');
    assert.equal(bad({ tools: [{ type: 'file_search' }] }), 'tools[0].type');
    assert.equal(bad({ tools: [{ type: 'code_interpreter' }] }), 'tools[0].type');
    assert.equal(bad({ tools: [{ type: 'function', name: 'f', extra: 1 }] }), 'tools[0].extra');
    assert.equal(
      bad({ tools: [{ type: 'function', name: 'f', defer_loading: true }] }),
      'tools[0].defer_loading',
    );
    assert.equal(
      bad({ tools: [{ type: 'web_search', filters: { allowed_domains: ['a.com'] } }] }),
      'tools[0].filters',
    );
    assert.equal(
      bad({ tools: [{ type: 'namespace', name: 'ns', description: 'd', tools: [{ type: 'mcp' }] }] }),
      'tools[0].tools[0].type',
    );
    assert.equal(bad({ tool_choice: { type: 'file_search' } }), 'tool_choice.type');
    assert.equal(bad({ text: { format: { type: 'grammar' } } }), 'text.format.type');
    assert.equal(bad({ previous_response_id: '' }), 'previous_response_id');
    const e = reject400(ResponseRequestSchema, { model: m, input: 'x', verbosity: 'low', seed: 1 });
    assert.match(e.message, /'verbosity', 'seed'/);
  });

  it('accepts namespace, custom and web_search tools and the items agents replay', () => {
    const r = parseOrThrow(ResponseRequestSchema, {
      model: 'chat-E',
      input: [
        { role: 'developer', content: 'rules' },
        { role: 'user', content: [] },
        { type: 'reasoning', summary: [], encrypted_content: 'k1.abc', status: null },
        { type: 'function_call', call_id: 'c1', name: 'exec', namespace: 'shell', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: [] },
        { type: 'custom_tool_call', call_id: 'c2', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'custom_tool_call_output', call_id: 'c2', output: 'ok' },
        { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
      ],
      tools: [
        {
          type: 'namespace',
          name: 'shell',
          description: 'shell tools',
          tools: [{ type: 'function', name: 'exec', parameters: { type: 'object' }, defer_loading: false }],
        },
        {
          type: 'custom',
          name: 'apply_patch',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: x' },
        },
        { type: 'web_search', search_context_size: 'medium', filters: { allowed_domains: null } },
      ],
      tool_choice: { type: 'custom', name: 'apply_patch' },
    });
    assert.equal(r.tools?.length, 3);
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
