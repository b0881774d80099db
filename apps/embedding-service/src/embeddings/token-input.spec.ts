import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, EmbeddingRequestSchema, parseOrThrow } from '@infer/contracts';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import type { EmbeddingEngine } from '../engines/engine.js';
import { LexicalHashEngine } from '../engines/lexical-hash.js';
import { detokenizeInputs, tokenLists } from './token-input.js';

const enc = new Tiktoken(cl100kBase);
const engine = new LexicalHashEngine(
  { char_ngrams: [3, 5], weights: { words: 1, bigrams: 0.5, chars: 1 } } as never,
  {
    dimensions: 64,
    maxInputTokens: 8192,
    batch: { enabled: false, max_items: 1, max_tokens: 1, max_wait_ms: 0, max_concurrent: 1 },
  },
);

describe('token-id input of /v1/embeddings', () => {
  it('the schema takes one id array or an array of id arrays; rejects empty lists and negatives', () => {
    const parse = (input: unknown) =>
      parseOrThrow(EmbeddingRequestSchema, { model: 'embed-model', input }).input;
    assert.deepEqual(parse([1, 2, 3]), [1, 2, 3]);
    assert.deepEqual(parse([[1], [2, 3]]), [[1], [2, 3]]);
    for (const bad of [[[]], [-1], [1.5], [[1], 'x']]) {
      assert.throws(
        () => parse(bad),
        (e: ApiError) => e.status === 400 && e.param?.startsWith('input') === true,
      );
    }
  });

  it('tokenLists tells token input from text', () => {
    assert.equal(tokenLists('hi'), null);
    assert.equal(tokenLists(['a', 'b']), null);
    assert.deepEqual(tokenLists([5, 6]), [[5, 6]]);
    assert.deepEqual(tokenLists([[5], [6]]), [[5], [6]]);
  });

  it('lexical-hash reads cl100k_base ids as the text they spell; unknown ids are a 400 naming the input', () => {
    const text = 'The weather is sunny today.';
    assert.deepEqual(detokenizeInputs(engine, 'embed-model', [enc.encode(text), enc.encode('x')], false), [
      text,
      'x',
    ]);
    assert.throws(
      () => detokenizeInputs(engine, 'embed-model', [enc.encode('ok'), [99_999_999]], false),
      (e: ApiError) => e.status === 400 && e.param === 'input[1]' && /cl100k_base/.test(e.message),
    );
  });

  it('an engine without a tokenizer refuses token ids (400 naming input)', () => {
    const noTokenizer = { type: 'tei' } as unknown as EmbeddingEngine;
    assert.throws(
      () => detokenizeInputs(noTokenizer, 'embed-tei', [[1, 2]], true),
      (e: ApiError) => e.status === 400 && e.param === 'input' && /send the input as text/.test(e.message),
    );
  });
});
