import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ApiError,
  type CatalogEntry,
  CatalogEntrySchema,
  type ChatCompletionRequest,
} from '@infer/contracts';
import { decideReasoning, toEngineInput } from './engine-input.js';

const model = (reasoning: string): CatalogEntry =>
  CatalogEntrySchema.parse({
    id: `m-${reasoning}`,
    kind: 'chat',
    rank: 1,
    tiers: ['inference'],
    capabilities: { reasoning },
    engine: { type: 'simulator' },
  });
const body = (extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});
const on = (e: boolean) => ({ chat_template_kwargs: { enable_thinking: e } });

describe('decideReasoning', () => {
  it('effort: on, effort from reasoning_effort, medium by default', () => {
    assert.deepEqual(decideReasoning(model('effort'), body()), { effort: 'medium' });
    assert.deepEqual(decideReasoning(model('effort'), body({ reasoning_effort: 'high' })), {
      effort: 'high',
    });
  });
  it('always (chat-B): on, both switches ignored', () => {
    assert.deepEqual(decideReasoning(model('always'), body({ ...on(false), reasoning_effort: 'low' })), {
      effort: null,
    });
  });
  it('fixed_on: on; a switch that asks for something else is a 400 naming it', () => {
    assert.deepEqual(decideReasoning(model('fixed_on'), body()), { effort: null });
    assert.deepEqual(decideReasoning(model('fixed_on'), body(on(true))), { effort: null }, 'a no-op switch');
    assert.throws(
      () => decideReasoning(model('fixed_on'), body(on(false))),
      (e: ApiError) => e.status === 400 && e.param === 'chat_template_kwargs.enable_thinking',
    );
    assert.throws(
      () => decideReasoning(model('fixed_on'), body({ reasoning_effort: 'low' })),
      (e: ApiError) => e.status === 400 && e.param === 'reasoning_effort',
    );
  });
  it('default_on / default_off: enable_thinking with that default; reasoning_effort is a 400', () => {
    assert.ok(decideReasoning(model('default_on'), body()));
    assert.equal(decideReasoning(model('default_on'), body(on(false))), null);
    assert.equal(decideReasoning(model('default_off'), body()), null);
    assert.ok(decideReasoning(model('default_off'), body(on(true))));
    for (const mode of ['default_on', 'default_off']) {
      assert.throws(
        () => decideReasoning(model(mode), body({ ...on(true), reasoning_effort: 'low' })),
        (e: ApiError) => e.status === 400 && e.param === 'reasoning_effort',
      );
    }
  });
  it('effort: enable_thinking false is a 400, true a no-op', () => {
    assert.deepEqual(decideReasoning(model('effort'), body(on(true))), { effort: 'medium' });
    assert.throws(
      () => decideReasoning(model('effort'), body(on(false))),
      (e: ApiError) => e.status === 400 && e.param === 'chat_template_kwargs.enable_thinking',
    );
  });
  it('none: off; asking it to reason is a 400 naming the switch', () => {
    assert.equal(decideReasoning(model('none'), body()), null);
    assert.equal(decideReasoning(model('none'), body(on(false))), null);
    assert.throws(
      () => decideReasoning(model('none'), body({ reasoning_effort: 'low' })),
      (e: ApiError) => e.status === 400 && e.param === 'reasoning_effort',
    );
    assert.throws(
      () => decideReasoning(model('none'), body(on(true))),
      (e: ApiError) => e.status === 400 && e.param === 'chat_template_kwargs.enable_thinking',
    );
  });
});

describe('toEngineInput', () => {
  it('applies the spec defaults and normalizes the request', () => {
    const input = toEngineInput(
      body({
        messages: [
          {
            role: 'developer',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
          { role: 'user', content: [{ type: 'text', text: 'hi' }], name: 'ann' },
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
        ],
        stop: 'END',
      }),
      model('none'),
    );
    assert.deepEqual(input.sampling, {
      temperature: 0.6,
      top_p: 0.95,
      seed: null,
      presence_penalty: null,
      frequency_penalty: null,
      top_k: null,
    });
    assert.deepEqual(input.messages[0], { role: 'system', content: 'a\nb' });
    assert.deepEqual(input.messages[1], { role: 'user', content: 'hi', name: 'ann' });
    assert.ok(Array.isArray(input.messages[2]?.content), 'multimodal parts are kept');
    assert.deepEqual(input.stop, ['END']);
    assert.equal(input.max_tokens, null);
    assert.equal(input.tool_choice, 'none', 'no tools, no tool calls');
    assert.equal(input.reasoning, null);
  });

  it('keeps explicit sampling and prefers max_completion_tokens', () => {
    const input = toEngineInput(
      body({ temperature: 0, top_p: 1, top_k: 40, max_tokens: 5, max_completion_tokens: 9 }),
      model('none'),
    );
    assert.equal(input.sampling.temperature, 0);
    assert.equal(input.sampling.top_p, 1);
    assert.equal(input.sampling.top_k, 40);
    assert.equal(input.max_tokens, 9);
  });

  it('checks tool_choice against tools', () => {
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    assert.equal(toEngineInput(body({ tools }), model('none')).tool_choice, 'auto');
    assert.throws(
      () => toEngineInput(body({ tool_choice: 'required' }), model('none')),
      (e: ApiError) => e.status === 400 && e.param === 'tool_choice',
    );
    assert.throws(
      () =>
        toEngineInput(
          body({ tools, tool_choice: { type: 'function', function: { name: 'g' } } }),
          model('none'),
        ),
      (e: ApiError) => e.status === 400 && e.param === 'tool_choice' && /'g'/.test(e.message),
    );
  });
});
