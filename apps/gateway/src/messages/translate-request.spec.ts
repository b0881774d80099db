import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AnthropicMessagesRequestSchema,
  ApiError,
  type CatalogEntry,
  ChatCompletionRequestSchema,
  parseOrThrow,
  type ReasoningMode,
} from '@infer/contracts';
import { refuseUnsupported, toChatRequest, toCountRequest } from './translate-request.js';

const model = (reasoning: ReasoningMode = 'none'): Pick<CatalogEntry, 'id' | 'capabilities'> => ({
  id: 'chat-X',
  capabilities: {
    streaming: true,
    tools: true,
    vision: true,
    audio_input: false,
    response_format: true,
    completions: false,
    responses: false,
    reasoning,
  },
});

/** Parses like the front door, translates, and checks that the chat body passes the chat schema. */
function translate(raw: Record<string, unknown>, reasoning: ReasoningMode = 'none', stream = false) {
  refuseUnsupported(raw);
  const req = parseOrThrow(AnthropicMessagesRequestSchema, { model: 'chat-X', max_tokens: 100, ...raw });
  const chat = toChatRequest(req, model(reasoning), stream);
  parseOrThrow(ChatCompletionRequestSchema, chat);
  return chat;
}

describe('Messages request -> chat body', () => {
  it('system as a string or blocks, text turns, sampling fields and stop_sequences', () => {
    const a = translate({
      system: 'be brief',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['END'],
    });
    assert.deepEqual(a.messages, [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ]);
    assert.equal(a.max_tokens, 100);
    assert.equal(a.temperature, 0.2);
    assert.equal(a.top_p, 0.9);
    assert.equal(a.top_k, 40);
    assert.deepEqual(a.stop, ['END']);
    const b = translate({
      system: [
        { type: 'text', text: 'one', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'two' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
    assert.deepEqual(b.messages[0], { role: 'system', content: 'one\ntwo' });
    assert.deepEqual(b.messages[1], { role: 'user', content: 'hi' });
  });

  it('a system turn inside messages (as Claude Code 2.1 sends) stays a system message at its place', () => {
    const c = translate({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: [{ type: 'text', text: '# Environment' }] },
        { role: 'user', content: 'go' },
      ],
    });
    assert.deepEqual(c.messages, [
      { role: 'user', content: 'hi' },
      { role: 'system', content: '# Environment' },
      { role: 'user', content: 'go' },
    ]);
  });

  it('images: base64 becomes a data: URI, a URL stays a URL (the chat-service fetches it behind its SSRF guard)', () => {
    const c = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
            { type: 'text', text: 'what is this?' },
          ],
        },
      ],
    });
    assert.deepEqual(c.messages[0], {
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
        { type: 'text', text: 'what is this?' },
      ],
    });
  });

  it('a tool round trip: tool_use -> tool_calls, tool_result (is_error, content arrays) -> tool messages first', () => {
    const c = translate({
      tools: [
        { name: 'Write', description: 'write a file', input_schema: { type: 'object', properties: {} } },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: 'write it' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should write', signature: 'sig' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Writing.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Write', input: { path: 'a.txt' } },
            { type: 'tool_use', id: 'toolu_2', name: 'Write', input: { path: 'b.txt' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              is_error: true,
              content: [
                { type: 'text', text: 'denied' },
                { type: 'image', source: { type: 'url', url: 'https://example.com/s.png' } },
              ],
            },
            { type: 'text', text: 'go on' },
          ],
        },
      ],
    });
    assert.deepEqual(c.tools, [
      {
        type: 'function',
        function: {
          name: 'Write',
          description: 'write a file',
          parameters: { type: 'object', properties: {} },
        },
      },
    ]);
    assert.equal(c.tool_choice, 'required');
    assert.equal(c.parallel_tool_calls, false);
    assert.deepEqual(c.messages[1], {
      role: 'assistant',
      content: 'Writing.',
      reasoning_content: 'I should write',
      tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'Write', arguments: '{"path":"a.txt"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'Write', arguments: '{"path":"b.txt"}' } },
      ],
    });
    assert.deepEqual(c.messages.slice(2), [
      { role: 'tool', tool_call_id: 'toolu_1', content: 'ok' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: denied' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'https://example.com/s.png' } },
          { type: 'text', text: 'go on' },
        ],
      },
    ]);
  });

  it('an assistant turn with only tool calls has null content', () => {
    const c = translate({
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't' }] },
      ],
    });
    assert.equal((c.messages[1] as { content: unknown }).content, null);
    assert.deepEqual(c.messages[2], { role: 'tool', tool_call_id: 't', content: '' });
  });

  it('tool_choice auto / tool / none', () => {
    const tools = [{ name: 'f', input_schema: { type: 'object' } }];
    const messages = [{ role: 'user', content: 'x' }];
    assert.equal(translate({ tools, messages, tool_choice: { type: 'auto' } }).tool_choice, 'auto');
    assert.equal(translate({ tools, messages, tool_choice: { type: 'none' } }).tool_choice, 'none');
    assert.deepEqual(translate({ tools, messages, tool_choice: { type: 'tool', name: 'f' } }).tool_choice, {
      type: 'function',
      function: { name: 'f' },
    });
  });

  it('thinking on each kind of reasoning switch', () => {
    const messages = [{ role: 'user', content: 'x' }];
    const on = { type: 'enabled', budget_tokens: 2000 };
    const t = (reasoning: ReasoningMode, thinking: unknown, extra: Record<string, unknown> = {}) => {
      const c = translate({ messages, thinking, max_tokens: 50_000, ...extra }, reasoning);
      return { effort: c.reasoning_effort, kwargs: c.chat_template_kwargs };
    };
    assert.deepEqual(t('effort', on), { effort: 'low', kwargs: undefined });
    assert.deepEqual(t('effort', { type: 'enabled', budget_tokens: 8000 }).effort, 'medium');
    assert.deepEqual(t('effort', { type: 'enabled', budget_tokens: 32_000 }).effort, 'high');
    assert.deepEqual(t('effort', { type: 'adaptive' }).effort, undefined);
    assert.deepEqual(t('effort', { type: 'disabled' }).effort, 'low');
    assert.deepEqual(t('effort', { type: 'adaptive' }, { output_config: { effort: 'max' } }).effort, 'high');
    assert.deepEqual(t('default_off', on).kwargs, { enable_thinking: true });
    assert.deepEqual(t('default_on', { type: 'disabled' }).kwargs, { enable_thinking: false });
    assert.deepEqual(t('default_on', { type: 'adaptive' }), { effort: undefined, kwargs: undefined });
    assert.deepEqual(t('fixed_on', { type: 'disabled' }), { effort: undefined, kwargs: undefined });
    assert.deepEqual(t('none', { type: 'adaptive' }), { effort: undefined, kwargs: undefined });
    assert.throws(
      () => t('none', on),
      (e: ApiError) => e.status === 400 && e.param === 'thinking',
    );
    assert.throws(
      () => translate({ messages, thinking: on, max_tokens: 2000 }, 'effort'),
      (e: ApiError) => e.param === 'thinking.budget_tokens' && /greater than/.test(e.message),
    );
    assert.throws(
      () => translate({ messages, thinking: { type: 'enabled', budget_tokens: 10 } }, 'effort'),
      (e: ApiError) => e.param === 'thinking.budget_tokens',
    );
  });

  it('fields that ask for nothing are accepted; output_config.format becomes a json_schema response_format', () => {
    const c = translate({
      messages: [{ role: 'user', content: 'x' }],
      metadata: { user_id: 'u1' },
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      output_config: { format: { type: 'json_schema', schema: { type: 'object' } } },
      service_tier: 'auto',
      container: null,
      cache_control: { type: 'ephemeral' },
    });
    assert.deepEqual(c.response_format, {
      type: 'json_schema',
      json_schema: { name: 'output', strict: true, schema: { type: 'object' } },
    });
    assert.equal('metadata' in c, false);
  });

  it('fields that ask for what we do not deliver are a 400 naming them', () => {
    const messages = [{ role: 'user', content: 'x' }];
    const refused = (raw: Record<string, unknown>, param: string) =>
      assert.throws(
        () => translate({ messages, ...raw }),
        (e: ApiError) => e instanceof ApiError && e.status === 400 && e.param === param,
        param,
      );
    refused({ mcp_servers: [{ type: 'url', url: 'https://x', name: 'x' }] }, 'mcp_servers');
    refused({ container: 'container_1' }, 'container');
    refused({ speed: 'fast' }, 'speed');
    refused({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type');
    refused({ frequency_penalty: 1 }, 'frequency_penalty');
    refused(
      { messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] }] },
      'messages[0].content[0].type',
    );
    refused(
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'x' } },
            ],
          },
        ],
      },
      'messages[0].content[0].source.type',
    );
    refused({ stop_sequences: ['a', 'b', 'c', 'd', 'e'] }, 'stop_sequences');
    refused({ temperature: 1.5 }, 'temperature');
  });

  it('streams ask for the usage chunk; count_tokens asks for one output token', () => {
    const c = translate({ messages: [{ role: 'user', content: 'x' }] }, 'none', true);
    assert.equal(c.stream, true);
    assert.deepEqual(c.stream_options, { include_usage: true });
    const n = toCountRequest({ model: 'chat-X', messages: [{ role: 'user', content: 'x' }] }, model('none'));
    assert.equal(n.max_tokens, 1);
    assert.equal(n.stream, undefined);
  });
});
