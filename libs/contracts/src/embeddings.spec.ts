import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeEmbeddingBase64,
  EMBEDDINGS_MAX_INPUTS,
  EmbeddingListSchema,
  EmbeddingRequestSchema,
  encodeEmbeddingBase64,
} from './embeddings.js';
import { reject400 } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

const model = 'embed-model';

describe('EmbeddingRequestSchema', () => {
  it('accepts a string or an array of strings, encoding_format float by default', () => {
    const one = parseOrThrow(EmbeddingRequestSchema, { model, input: 'hello' });
    assert.equal(one.input, 'hello');
    assert.equal(one.encoding_format, 'float');
    const many = parseOrThrow(EmbeddingRequestSchema, {
      model,
      input: ['a', 'b'],
      encoding_format: 'base64',
      dimensions: 256,
      user: 'u',
    });
    assert.deepEqual(many.input, ['a', 'b']);
    assert.equal(many.encoding_format, 'base64');
    assert.equal(many.dimensions, 256);
  });

  it('refuses an empty string, an empty array and an empty item, naming the item', () => {
    assert.equal(reject400(EmbeddingRequestSchema, { model, input: '' }).param, 'input');
    assert.equal(reject400(EmbeddingRequestSchema, { model, input: [] }).param, 'input');
    const e = reject400(EmbeddingRequestSchema, { model, input: ['a', 'b', 'c', ''] });
    assert.equal(e.param, 'input[3]');
    assert.match(e.message, /empty/);
    assert.equal(reject400(EmbeddingRequestSchema, { model, input: ['a', 7] }).param, 'input[1]');
  });

  it('takes at most 2048 inputs', () => {
    assert.equal(EMBEDDINGS_MAX_INPUTS, 2048);
    const ok = parseOrThrow(EmbeddingRequestSchema, { model, input: Array(2048).fill('x') });
    assert.equal((ok.input as string[]).length, 2048);
    const e = reject400(EmbeddingRequestSchema, { model, input: Array(2049).fill('x') });
    assert.equal(e.param, 'input');
    assert.match(e.message, /2048/);
  });

  it('names missing and wrongly typed fields', () => {
    assert.match(reject400(EmbeddingRequestSchema, { model }).message, /Missing required parameter: 'input'/);
    assert.equal(reject400(EmbeddingRequestSchema, { input: 'x' }).param, 'model');
    assert.equal(reject400(EmbeddingRequestSchema, { model, input: 5 }).param, 'input');
    assert.equal(
      reject400(EmbeddingRequestSchema, { model, input: 'x', encoding_format: 'hex' }).param,
      'encoding_format',
    );
    assert.equal(reject400(EmbeddingRequestSchema, { model, input: 'x', dimensions: 0 }).param, 'dimensions');
    assert.equal(
      reject400(EmbeddingRequestSchema, { model, input: 'x', dimensions: 1.5 }).param,
      'dimensions',
    );
  });
});

describe('base64 embeddings', () => {
  it('encodes little-endian float32', () => {
    // 1.0f = 0x3f800000 -> bytes 00 00 80 3f
    assert.equal(encodeEmbeddingBase64([1]), 'AACAPw==');
    assert.equal(encodeEmbeddingBase64([]), '');
  });

  it('round-trips exactly for float32 values and within float32 precision otherwise', () => {
    const exact = [0, 1, -1, 0.5, -1.25, 3, 1024.125];
    assert.deepEqual(decodeEmbeddingBase64(encodeEmbeddingBase64(exact)), exact);
    const vec = Array.from({ length: 4096 }, (_, i) => Math.sin(i) / 3);
    const back = decodeEmbeddingBase64(encodeEmbeddingBase64(vec));
    assert.equal(back.length, 4096);
    for (let i = 0; i < vec.length; i++) assert.equal(back[i], Math.fround(vec[i] as number));
  });

  it('decodes as the openai SDK does (Buffer + Float32Array)', () => {
    const vec = [0.1, -0.2, 0.3, 42];
    const buf = Buffer.from(encodeEmbeddingBase64(vec), 'base64');
    const sdk = Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4));
    assert.deepEqual(sdk, vec.map(Math.fround));
  });

  it('refuses bytes that are not whole float32 values', () => {
    assert.throws(() => decodeEmbeddingBase64(btoa('abc')), /float32/);
  });
});

describe('EmbeddingListSchema', () => {
  it('parses float and base64 vectors', () => {
    const list = EmbeddingListSchema.parse({
      object: 'list',
      model,
      data: [
        { object: 'embedding', index: 0, embedding: [0.1, 0.2] },
        { object: 'embedding', index: 1, embedding: encodeEmbeddingBase64([0.1, 0.2]) },
      ],
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    assert.equal(list.data.length, 2);
    assert.equal(typeof list.data[1]?.embedding, 'string');
    assert.equal(
      EmbeddingListSchema.safeParse({ ...list, data: [{ object: 'vector', index: 0, embedding: [] }] })
        .success,
      false,
    );
  });
});
