import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompletionChunkSchema, CompletionRequestSchema, CompletionSchema } from './completions.js';
import { rejectParam } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

const base = { model: 'chat-E', prompt: 'Once upon a time' };

describe('CompletionRequestSchema', () => {
  it('accepts the minimal request and every listed option', () => {
    assert.deepEqual(parseOrThrow(CompletionRequestSchema, base), base);
    const r = parseOrThrow(CompletionRequestSchema, {
      ...base,
      max_tokens: 16,
      temperature: 2,
      top_p: 0,
      stream: true,
      stop: ['\n', 'END'],
      n: 2,
      user: 'u1',
      seed: 42,
    });
    assert.equal(r.stream, true);
    assert.deepEqual(r.stop, ['\n', 'END']);
    assert.equal(r.seed, 42);
    assert.equal(parseOrThrow(CompletionRequestSchema, { ...base, stop: 'x' }).stop, 'x');
  });

  it('requires model and prompt', () => {
    assert.equal(rejectParam(CompletionRequestSchema, { model: 'chat-E' }), 'prompt');
    assert.equal(rejectParam(CompletionRequestSchema, { prompt: 'x' }), 'model');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, prompt: ['a', 'b'] }), 'prompt');
  });

  it('checks bounds', () => {
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, max_tokens: 0 }), 'max_tokens');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, max_tokens: 1.5 }), 'max_tokens');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, temperature: 2.01 }), 'temperature');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, temperature: -1 }), 'temperature');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, top_p: 1.1 }), 'top_p');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, stream: 'yes' }), 'stream');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, n: 0 }), 'n');
    assert.equal(rejectParam(CompletionRequestSchema, { ...base, seed: 1.5 }), 'seed');
  });

  it('strips fields it does not know (SDK extras)', () => {
    const r = parseOrThrow(CompletionRequestSchema, { ...base, echo: true, best_of: 3, logit_bias: {} });
    assert.deepEqual(Object.keys(r).sort(), ['model', 'prompt']);
  });
});

describe('Completion and its stream chunk', () => {
  const usage = { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 };
  it('parses a completion with logprobs null', () => {
    const c = CompletionSchema.parse({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 1_700_000_000,
      model: 'chat-E',
      choices: [{ text: ' there was', index: 0, finish_reason: 'length', logprobs: null }],
      usage,
    });
    assert.equal(c.choices[0]?.text, ' there was');
    assert.equal(
      CompletionSchema.safeParse({ ...c, object: 'chat.completion' }).success,
      false,
      'object must be text_completion',
    );
    assert.equal(
      CompletionSchema.safeParse({ ...c, choices: [{ ...c.choices[0], finish_reason: null }] }).success,
      false,
    );
  });

  it('streams the same object type with a null finish_reason until the end', () => {
    const chunk = {
      id: 'cmpl-1',
      object: 'text_completion',
      created: 1,
      model: 'chat-E',
      choices: [{ text: ' there', index: 0, finish_reason: null, logprobs: null }],
    };
    assert.equal(CompletionChunkSchema.parse(chunk).choices[0]?.finish_reason, null);
    const last = {
      ...chunk,
      choices: [{ text: '', index: 0, finish_reason: 'stop', logprobs: null }],
      usage,
    };
    assert.deepEqual(CompletionChunkSchema.parse(last).usage, usage);
    assert.equal(
      CompletionChunkSchema.safeParse({ ...chunk, object: 'text_completion.chunk' }).success,
      false,
    );
  });
});
