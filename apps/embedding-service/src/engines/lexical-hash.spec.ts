import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { catalogEntry, cosine, engineContext, neverAborted } from '../testing/catalog.js';
import type { EmbeddingEngine } from './engine.js';
import { hash32, lexicalHashFactory } from './lexical-hash.js';
import { EngineConfigError } from './settings.js';

const make = (engine: Record<string, unknown> = {}, over: Record<string, unknown> = {}): EmbeddingEngine => {
  const model = catalogEntry({ dimensions: 4096, engine: { type: 'lexical-hash', ...engine }, ...over });
  return lexicalHashFactory.create(model.engine as never, engineContext(model));
};
const embed = async (e: EmbeddingEngine, texts: string[]) => (await e.embed(texts, neverAborted)).vectors;

describe('lexical-hash engine', () => {
  it('makes unit vectors of the catalog dimensions, deterministically', async () => {
    const e = make();
    const info = await e.ready();
    assert.equal(info.dimensions, 4096);
    assert.equal(info.maxInputTokens, 8192, 'no context_window: the documented default');
    const [a, b] = await embed(e, ['The quick brown fox', 'The quick brown fox']);
    assert.equal(a?.length, 4096);
    const norm = Math.sqrt(Array.from(a as Float32Array).reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-5, `unit length, got ${norm}`);
    assert.deepEqual(a, b);
    const [again] = await embed(make(), ['The quick brown fox']);
    assert.deepEqual(again, a, 'same text, same settings: same vector in another engine instance');
  });

  it('puts similar texts closer than unrelated ones', async () => {
    const e = make();
    const [q, near, inflected, typo, far] = await embed(e, [
      'how do I reset my password',
      'reset your password from the login page',
      'resetting passwords',
      'how do I rest my pasword',
      'bananas are rich in potassium',
    ]);
    const cNear = cosine(q as Float32Array, near as Float32Array);
    const cFar = cosine(q as Float32Array, far as Float32Array);
    assert.ok(cNear > 0.3, `shared words: ${cNear}`);
    assert.ok(Math.abs(cFar) < 0.1, `unrelated: ${cFar}`);
    assert.ok(cNear > cFar + 0.2);
    assert.ok(
      cosine(near as Float32Array, inflected as Float32Array) > cFar + 0.1,
      'inflections share n-grams',
    );
    assert.ok(cosine(q as Float32Array, typo as Float32Array) > 0.5, 'typos stay close');
  });

  it('is case- and width-insensitive, and order-sensitive only a little', async () => {
    const e = make();
    const [a, b, c, d] = await embed(e, ['Hello World', 'hello world', 'dog bites man', 'man bites dog']);
    assert.ok(cosine(a as Float32Array, b as Float32Array) > 0.9999);
    const order = cosine(c as Float32Array, d as Float32Array);
    assert.ok(order > 0.7 && order < 0.999, `word pairs make order matter a little: ${order}`);
  });

  it('gives the zero vector to whitespace, and counts tokens with the approximation', async () => {
    const e = make();
    await e.ready();
    const [z] = await embed(e, ['   \n ']);
    assert.ok(z?.every((x) => x === 0));
    assert.deepEqual(e.countTokens(['Hello, world!', 'internationalization', ' ']), [4, 3, 0]);
  });

  it('changes with the seed and honours the context_window', async () => {
    const [a] = await embed(make(), ['seeded text']);
    const [b] = await embed(make({ seed: 7 }), ['seeded text']);
    assert.ok(cosine(a as Float32Array, b as Float32Array) < 0.5);
    assert.equal((await make({}, { context_window: 100 }).ready()).maxInputTokens, 100);
  });

  it('refuses settings that cannot work, without internals in the client message', () => {
    assert.throws(
      () => make({ char_ngrams: [5, 3] }),
      (e: unknown) =>
        e instanceof EngineConfigError &&
        e.status === 500 &&
        /char_ngrams/.test(e.detail) &&
        !/char_ngrams/.test(e.message),
    );
    assert.throws(() => make({}, { dimensions: undefined }), EngineConfigError);
  });

  it('stops between texts when the request is cancelled', async () => {
    const ac = new AbortController();
    ac.abort(new Error('gone'));
    await assert.rejects(make().embed(['a'], ac.signal), /gone/);
  });

  it('hashes with a spread over the slots', () => {
    const counts = new Array(16).fill(0);
    for (let i = 0; i < 16000; i++) counts[hash32(`w${i}`) % 16]++;
    for (const c of counts) assert.ok(c > 800 && c < 1200, `slot count ${c}`);
  });
});
