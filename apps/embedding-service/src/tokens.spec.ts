import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countTokens, terms } from './tokens.js';

describe('token approximation', () => {
  it('counts pieces: words of up to 8 letters, punctuation, CJK characters', () => {
    assert.equal(countTokens('Hello, world!'), 4);
    assert.equal(countTokens('internationalization'), 3);
    assert.equal(countTokens('東京タワー'), 5);
    assert.equal(countTokens('   '), 0);
    assert.equal(countTokens('a b  c'), 3);
  });
});

describe('terms', () => {
  it('normalizes (NFKC, lower case) and splits words and symbols', () => {
    assert.deepEqual(
      terms('Ｈｅｌｌｏ, Wörld!').map((t) => [t.text, t.kind]),
      [
        ['hello', 'word'],
        [',', 'symbol'],
        ['wörld', 'word'],
        ['!', 'symbol'],
      ],
    );
  });

  it('makes each CJK character a word of its own', () => {
    assert.deepEqual(
      terms('東京 tower').map((t) => t.text),
      ['東', '京', 'tower'],
    );
  });

  it('adds the parts of camelCase identifiers when asked', () => {
    assert.deepEqual(
      terms('parseJSONValue x', { splitIdentifiers: true }).map((t) => t.text),
      ['parsejsonvalue', 'parse', 'json', 'value', 'x'],
    );
    assert.deepEqual(
      terms('parseJSONValue').map((t) => t.text),
      ['parsejsonvalue'],
    );
    // snake_case splits by itself (the underscore is a symbol).
    assert.deepEqual(
      terms('max_tokens').map((t) => t.text),
      ['max', '_', 'tokens'],
    );
  });
});
