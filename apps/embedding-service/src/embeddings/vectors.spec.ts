import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeEmbeddingBase64, encodeEmbeddingBase64 } from '@infer/contracts';
import { encodedSize, encodeVector, truncateVector } from './vectors.js';

describe('vectors on the wire', () => {
  const v = Float32Array.from([0.1, -2.5, 0, 1e-10, -0, 3.4028234663852886e38, Number.MIN_VALUE]);

  it('base64 is byte for byte the contracts encoding, and decodes to the float output', () => {
    const b64 = encodeVector(v, 'base64') as string;
    assert.equal(b64, encodeEmbeddingBase64(Array.from(v)));
    assert.deepEqual(decodeEmbeddingBase64(b64), encodeVector(v, 'float'));
    const view = v.subarray(2, 5);
    assert.equal(
      encodeVector(view, 'base64'),
      encodeEmbeddingBase64(Array.from(view)),
      'a view encodes its own bytes',
    );
  });

  it('float gives the exact float32 values, within the size estimate', () => {
    const f = encodeVector(v, 'float') as number[];
    assert.deepEqual(f, Array.from(v));
    assert.ok(JSON.stringify(f).length <= encodedSize(f));
    const worst = Array.from(Float32Array.from({ length: 64 }, (_, i) => -1.2345678e-10 * (i + 1)));
    assert.ok(JSON.stringify(worst).length <= encodedSize(worst));
  });

  it('truncates and normalises again', () => {
    const t = truncateVector(Float32Array.from([3, 4, 12]), 2);
    assert.deepEqual(Array.from(t), [Math.fround(0.6), Math.fround(0.8)]);
    const same = Float32Array.from([1, 0]);
    assert.equal(truncateVector(same, 2), same);
    assert.deepEqual(Array.from(truncateVector(Float32Array.from([0, 0, 1]), 2)), [0, 0]);
  });
});
