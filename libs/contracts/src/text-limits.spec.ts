import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatCompletionRequestSchema } from './chat.js';
import { EmbeddingRequestSchema } from './embeddings.js';
import { ImageGenerationRequestSchema } from './images.js';
import { RerankRequestSchema } from './rerank.js';
import { ResponseRequestSchema } from './responses.js';
import { SearchRequestSchema } from './search.js';
import { reject400, rejectParam } from './testing/reject.js';
import { TextLimits } from './text-limits.js';
import { parseOrThrow } from './validate.js';

const chat = { model: 'chat-A', messages: [{ role: 'user', content: 'hi' }] };
const over = (n: number) => 'x'.repeat(n + 1);

describe('TextLimits', () => {
  it('accepts values at the maximum and refuses one character more, naming the field', () => {
    parseOrThrow(SearchRequestSchema, { query: 'q'.repeat(TextLimits.searchQuery) });
    assert.equal(rejectParam(SearchRequestSchema, { query: over(TextLimits.searchQuery) }), 'query');
    parseOrThrow(ChatCompletionRequestSchema, { ...chat, user: 'u'.repeat(TextLimits.user) });
    assert.equal(rejectParam(ChatCompletionRequestSchema, { ...chat, user: over(TextLimits.user) }), 'user');
    assert.equal(rejectParam(ChatCompletionRequestSchema, { ...chat, stop: over(TextLimits.stop) }), 'stop');
    assert.equal(
      rejectParam(ChatCompletionRequestSchema, { ...chat, stop: ['ok', over(TextLimits.stop)] }),
      'stop[1]',
    );
    assert.equal(
      rejectParam(ImageGenerationRequestSchema, { prompt: over(TextLimits.imagePrompt) }),
      'prompt',
    );
    assert.equal(
      rejectParam(EmbeddingRequestSchema, { model: 'e', input: ['a', over(TextLimits.embeddingInput)] }),
      'input[1]',
    );
    assert.equal(
      rejectParam(RerankRequestSchema, { model: 'r', query: over(TextLimits.rerankText), documents: ['d'] }),
      'query',
    );
    assert.equal(
      rejectParam(ChatCompletionRequestSchema, { ...chat, model: over(TextLimits.model) }),
      'model',
    );
  });

  it('says the maximum when a union member is too long (not "Invalid input")', () => {
    const e = reject400(ChatCompletionRequestSchema, {
      ...chat,
      messages: [{ role: 'user', content: over(TextLimits.prompt) }],
    });
    assert.equal(e.param, 'messages[0].content');
    assert.match(e.message, /at most 10,485,760 characters/);
    const r = reject400(ResponseRequestSchema, { model: 'm', input: over(TextLimits.prompt) });
    assert.equal(r.param, 'input');
    assert.match(r.message, /at most/);
    const d = reject400(RerankRequestSchema, {
      model: 'r',
      query: 'q',
      documents: [over(TextLimits.rerankText)],
    });
    assert.equal(d.param, 'documents[0]');
    assert.match(d.message, /at most 100,000 characters/);
  });

  it('refuses a NUL character in a search query', () => {
    const e = reject400(SearchRequestSchema, { query: 'cats\u0000dogs' });
    assert.equal(e.param, 'query');
    assert.match(e.message, /NUL/);
  });
});
