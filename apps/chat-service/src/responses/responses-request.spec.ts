import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type CatalogEntry, parseOrThrow, ResponseRequestSchema } from '@infer/contracts';
import { responsesEngineFields } from './responses-request.js';

const caps = (over: Partial<CatalogEntry['capabilities']> = {}) =>
  ({
    id: 'chat-E',
    capabilities: { streaming: true, tools: true, response_format: true, responses: true, ...over },
  }) as unknown as Pick<CatalogEntry, 'id' | 'capabilities'>;

const fields = (body: Record<string, unknown>, model = caps()) =>
  responsesEngineFields(parseOrThrow(ResponseRequestSchema, { model: 'chat-E', ...body }), model);

function param(fn: () => unknown): string | null {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 400);
    return e.param;
  }
  return assert.fail('expected a 400');
}

const weather = { type: 'function', name: 'get_weather', parameters: { type: 'object' } };

describe('responsesEngineFields (Responses request -> engine input)', () => {
  it('maps flat function tools, tool_choice and text.format to the chat engine shapes', () => {
    const f = fields({
      input: 'x',
      tools: [weather],
      tool_choice: { type: 'function', name: 'get_weather' },
      text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
    });
    assert.deepEqual(f.tools, [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
    ]);
    assert.deepEqual(f.tool_choice, { type: 'function', function: { name: 'get_weather' } });
    assert.deepEqual(f.response_format, {
      type: 'json_schema',
      json_schema: { name: 'out', schema: { type: 'object' }, strict: true },
    });
    assert.equal(fields({ input: 'x' }).tool_choice, 'none');
    assert.equal(fields({ input: 'x', tools: [weather] }).tool_choice, 'auto');
    assert.deepEqual(fields({ input: 'x', text: { format: { type: 'json_object' } } }).response_format, {
      type: 'json_object',
    });
  });

  it('turns function_call / function_call_output items into an assistant turn and tool messages', () => {
    const f = fields({
      instructions: 'sys',
      input: [
        { role: 'user', content: 'weather in Oslo and Rome?' },
        { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'two calls' }] },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call', call_id: 'c2', name: 'get_weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'c1', output: '3C' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: '20C' }] },
      ],
      tools: [weather],
    });
    assert.deepEqual(f.messages, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'weather in Oslo and Rome?' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'two calls',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', content: '3C', tool_call_id: 'c1' },
      { role: 'tool', content: '20C', tool_call_id: 'c2' },
    ]);
    assert.deepEqual(f.inputIndex, [-1, 0, 2, 4, 5]);
  });

  it('the 400s of chat completions, naming the Responses fields', () => {
    assert.equal(
      param(() => fields({ input: 'x', tools: [weather] }, caps({ tools: false }))),
      'tools',
    );
    assert.equal(
      param(() =>
        fields({ input: 'x', text: { format: { type: 'json_object' } } }, caps({ response_format: false })),
      ),
      'text.format',
    );
    assert.equal(
      param(() => fields({ input: 'x', tool_choice: 'required' })),
      'tool_choice',
    );
    assert.equal(
      param(() => fields({ input: 'x', tools: [weather], tool_choice: { type: 'function', name: 'other' } })),
      'tool_choice',
    );
    assert.equal(
      param(() => fields({ input: 'x', tools: [weather, weather] })),
      'tools[1].name',
    );
    assert.equal(
      param(() =>
        fields({
          input: 'x',
          tools: [{ type: 'function', name: 'f', parameters: { type: 'no-such-type' } }],
        }),
      ),
      'tools[0].parameters',
    );
    assert.equal(
      param(() =>
        fields({
          input: 'x',
          text: { format: { type: 'json_schema', name: 'n', schema: { type: 'bogus' } } },
        }),
      ),
      'text.format.schema',
    );
    assert.equal(
      param(() =>
        fields({
          input: [
            { role: 'user', content: 'x' },
            { type: 'function_call_output', call_id: 'nope', output: 'y' },
          ],
        }),
      ),
      'input[1].call_id',
    );
    assert.equal(
      param(() => fields({ input: 'x', stream: true }, caps({ streaming: false }))),
      'stream',
    );
  });
});
