import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  countPromptTokens,
  countTokens,
  IMAGE_PART_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  REPLY_PRIMING_TOKENS,
  splitTokens,
} from './tokens.js';

describe('tokenizer approximation', () => {
  it('counts words, long-word splits, punctuation and CJK characters', () => {
    assert.equal(countTokens(''), 0);
    assert.equal(countTokens('   '), 0);
    assert.equal(countTokens('Hello, world!'), 4);
    assert.equal(countTokens('internationalization'), 3); // 8 + 8 + 4 letters
    assert.equal(countTokens('x = 42;'), 4);
    assert.equal(countTokens('日本語'), 3);
    assert.equal(countTokens('café 🙂'), 2);
  });

  it('splits text into exactly its tokens, losing no text', () => {
    const text = 'Hello, world! {"a": [1, 2]} internationalization';
    const pieces = splitTokens(text);
    assert.equal(pieces.join(''), text);
    assert.equal(pieces.length, countTokens(text));
  });

  it('counts a chat prompt: per-message overhead, names, images, tool calls and tool definitions', () => {
    const simple = countPromptTokens([{ role: 'user', content: 'Hello, world!' }]);
    assert.equal(simple, REPLY_PRIMING_TOKENS + MESSAGE_OVERHEAD_TOKENS + 4);
    const rich = countPromptTokens(
      [
        { role: 'system', content: 'Be brief.', name: 'ops' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'https://x/y.png' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{"q":"x"}' } }],
        },
        { role: 'tool', content: 'a cat', tool_call_id: 'c1' },
      ],
      [{ type: 'function', function: { name: 'look' } }],
    );
    const expected =
      REPLY_PRIMING_TOKENS +
      4 * MESSAGE_OVERHEAD_TOKENS +
      (3 + 1 + 1) + // "Be brief." + name overhead + "ops"
      (4 + IMAGE_PART_TOKENS) + // "What is this?" + image
      (1 + 9) + // look + {"q":"x"}
      2 + // a cat
      countTokens('{"name":"look"}');
    assert.equal(rich, expected);
  });
});
