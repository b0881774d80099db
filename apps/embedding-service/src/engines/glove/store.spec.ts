import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { convert, loadBinary, openStore, wordVectors } from './store.js';

/** A source in the package's layout: words by frequency, then vectors with l2 norm and index. */
function writeSource(file: string, words: string[], dims: number, value: (w: number, j: number) => number) {
  const vectors: Record<string, number[]> = {};
  words.forEach((w, i) => {
    const v = Array.from({ length: dims }, (_, j) => value(i, j));
    vectors[w] = [...v, Math.hypot(...v), i];
  });
  // Vectors in a different order than the words, as in the package (object key order).
  const shuffled = Object.fromEntries(Object.entries(vectors).reverse());
  writeFileSync(
    file,
    JSON.stringify({
      precision: 8,
      l2NormIndex: dims,
      wordIndex: dims + 1,
      size: words.length,
      dimensions: dims,
      words,
      vectors: shuffled,
      unkVector: Array(dims).fill(0),
    }),
  );
}

describe('word-vector store', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wvec-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const words = [
    'the',
    ',',
    '"',
    'caf\u00e9',
    'back\\slash',
    '\u65e5\u672c',
    'car',
    'automobile',
    'banana',
    'zebra',
  ];
  const value = (w: number, j: number) => Math.sin(w * 7 + j * 3) * (1 + w / 10);

  it('converts the JSON in small chunks (escapes and UTF-8 across chunk borders) into a trimmed int8 file', async () => {
    const src = join(dir, 'src.json');
    writeSource(src, words, 6, value);
    const out = join(dir, 'out.wvec');
    await convert(src, out, 8, 7); // 7-byte chunks: every token is cut somewhere
    const wv = await loadBinary(out);
    assert.equal(wv.dims, 6);
    assert.deepEqual(wv.words, words.slice(0, 8), 'the 8 most frequent words, in frequency order');
    assert.equal(wv.rank.get('caf\u00e9'), 3);
    assert.equal(wv.rank.get('back\\slash'), 4);
    assert.equal(wv.rank.get('banana'), undefined, 'trimmed');
    for (let r = 0; r < 8; r++) {
      const max = Math.max(...Array.from({ length: 6 }, (_, j) => Math.abs(value(r, j))));
      for (let j = 0; j < 6; j++) {
        const got = (wv.scales[r] as number) * (wv.values[r * 6 + j] as number);
        assert.ok(Math.abs(got - value(r, j)) <= max / 254 + 1e-6, `quantization error of ${words[r]}[${j}]`);
      }
    }
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith('.tmp')),
      [],
      'no temporary file left behind',
    );
  });

  it('refuses a truncated binary and a source that ends early', async () => {
    const src = join(dir, 'src2.json');
    writeSource(src, words, 4, value);
    const out = join(dir, 'out2.wvec');
    await convert(src, out, 100);
    truncateSync(out, 50);
    await assert.rejects(loadBinary(out), /truncated|not a word-vector/);
    truncateSync(src, 200);
    await assert.rejects(convert(src, join(dir, 'out3.wvec'), 100), /ended before|unexpected text/);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('out3')),
      [],
      'nothing written',
    );
  });

  it('converts once into the cache directory, then loads the binary; a changed source gets a new file', async () => {
    const src = join(dir, 'src4.json');
    const cacheDir = join(dir, 'cache');
    writeSource(src, words, 4, value);
    const a = await wordVectors({ source: src, cacheDir, vocabSize: 5 });
    assert.equal(a.words.length, 5);
    assert.equal(readdirSync(cacheDir).length, 1);
    assert.equal(await wordVectors({ source: src, cacheDir, vocabSize: 5 }), a, 'one copy per process');
    writeSource(src, [...words, 'extra'], 4, value);
    const b = await openStore({ source: src, cacheDir, vocabSize: 5 });
    assert.notEqual(b.file, a.file);
    assert.equal(readdirSync(cacheDir).length, 2);
    truncateSync(b.file, 30);
    const c = await openStore({ source: src, cacheDir, vocabSize: 5 });
    assert.deepEqual(c.words, b.words, 'a damaged binary is converted again');
  });
});
