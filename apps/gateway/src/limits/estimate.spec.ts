import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimatePromptTokens } from './estimate.js';

describe('prompt token estimate', () => {
  it('counts a quarter token per character, 4 per message, 3 for priming', () => {
    assert.equal(
      estimatePromptTokens({ model: 'chat-A', messages: [{ role: 'user', content: 'x'.repeat(400) }] }),
      107,
    );
    assert.equal(
      estimatePromptTokens({
        messages: [
          { role: 'system', content: 'abcd' },
          { role: 'user', content: [{ type: 'text', text: 'abcdefgh' }], name: 'ab' },
        ],
      }),
      Math.ceil(14 / 4) + 8 + 3,
    );
  });

  it('counts images and audio as fixed amounts, never their payload', () => {
    const big = `data:image/png;base64,${'A'.repeat(1_000_000)}`;
    const n = estimatePromptTokens({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: big } },
            { type: 'input_audio', input_audio: { data: big, format: 'wav' } },
          ],
        },
      ],
    });
    assert.equal(n, 85 + 100 + 4 + 3);
  });

  it('reads the prompt fields of the other endpoints', () => {
    assert.equal(estimatePromptTokens({ prompt: 'x'.repeat(40) }), 13);
    assert.equal(estimatePromptTokens({ input: ['x'.repeat(8), 'y'.repeat(8)] }), 7);
    assert.equal(estimatePromptTokens({ input: 'x'.repeat(8), instructions: 'y'.repeat(8) }), 7);
    assert.equal(estimatePromptTokens({ query: 'abcd', documents: ['abcd', 'abcd'] }), 6);
    assert.equal(estimatePromptTokens({ input: [{ role: 'user', content: 'abcd' }] }), 1 + 4 + 3);
    assert.equal(estimatePromptTokens({}), 3);
    assert.equal(estimatePromptTokens(null), 1);
  });

  it('counts token ids (embeddings token input) one token each', () => {
    assert.equal(estimatePromptTokens({ input: [791, 9282, 374] }), 3 + 3);
    assert.equal(estimatePromptTokens({ input: [[1, 2], [3]] }), 3 + 3);
  });
});
