import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from './errors.js';
import {
  IMAGE_EDIT_MAX_IMAGES,
  IMAGE_MAX_BYTES,
  ImageEditRequestSchema,
  ImageGenerationRequestSchema,
  ImageResponseSchema,
  parseSize,
} from './images.js';
import { reject400 } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

const gen = { prompt: 'a red fox in the snow' };

describe('ImageGenerationRequestSchema', () => {
  it('has the spec defaults: n 1, response_format url, model and size left to the gateway', () => {
    const r = parseOrThrow(ImageGenerationRequestSchema, gen);
    assert.equal(r.n, 1);
    assert.equal(r.response_format, 'url');
    assert.equal(r.model, undefined);
    assert.equal(r.size, undefined);
  });

  it('accepts the service extensions and the accepted-and-ignored OpenAI fields', () => {
    const r = parseOrThrow(ImageGenerationRequestSchema, {
      ...gen,
      model: 'image-model',
      n: 4,
      size: '512x1536',
      response_format: 'b64_json',
      seed: 7,
      guidance: 3.5,
      quality: 'hd',
      style: 'vivid',
      background: 'transparent',
      moderation: 'low',
      output_format: 'png',
      output_compression: 80,
      user: 'u',
      stream: false,
    });
    assert.equal(r.n, 4);
    assert.equal(r.seed, 7);
    assert.equal(r.guidance, 3.5);
    assert.equal(r.response_format, 'b64_json');
  });

  it('requires a non-empty prompt', () => {
    assert.equal(reject400(ImageGenerationRequestSchema, {}).param, 'prompt');
    assert.equal(reject400(ImageGenerationRequestSchema, { prompt: '' }).param, 'prompt');
  });

  it('keeps n within 1..4 (n=5 -> 400 param n)', () => {
    const e = reject400(ImageGenerationRequestSchema, { ...gen, n: 5 });
    assert.equal(e.param, 'n');
    assert.match(e.message, /between 1 and 4/);
    assert.equal(reject400(ImageGenerationRequestSchema, { ...gen, n: 0 }).param, 'n');
    assert.equal(reject400(ImageGenerationRequestSchema, { ...gen, n: 1.5 }).param, 'n');
  });

  it('refuses stream: true with param stream and accepts false or absent', () => {
    const e = reject400(ImageGenerationRequestSchema, { ...gen, stream: true });
    assert.equal(e.param, 'stream');
    assert.match(e.message, /not supported/);
    assert.ok(parseOrThrow(ImageGenerationRequestSchema, { ...gen, stream: false }));
    assert.ok(parseOrThrow(ImageGenerationRequestSchema, { ...gen, stream: null }));
  });

  it('applies the size rules', () => {
    for (const size of [
      'auto',
      '1024x1024',
      '256x256',
      '1536x1536',
      '512x1536',
      '1536x512',
      '768x1024',
      '1024x512',
    ]) {
      assert.equal(parseOrThrow(ImageGenerationRequestSchema, { ...gen, size }).size, size, size);
    }
    const cases: Array<[string, RegExp]> = [
      ['1000x1000', /divisible by 16/],
      ['256x1024', /aspect ratio/],
      ['1536x496', /aspect ratio/],
      ['240x240', /between 256 and 1536/],
      ['1552x1552', /between 256 and 1536/],
      ['1024', /WIDTHxHEIGHT/],
      ['1024x1024px', /WIDTHxHEIGHT/],
      ['1024X1024', /WIDTHxHEIGHT/],
      ['', /WIDTHxHEIGHT/],
    ];
    for (const [size, msg] of cases) {
      const e = reject400(ImageGenerationRequestSchema, { ...gen, size });
      assert.equal(e.param, 'size', size);
      assert.match(e.message, msg, size);
    }
  });

  it('checks response_format, seed and guidance types', () => {
    assert.equal(
      reject400(ImageGenerationRequestSchema, { ...gen, response_format: 'png' }).param,
      'response_format',
    );
    assert.equal(reject400(ImageGenerationRequestSchema, { ...gen, seed: 1.5 }).param, 'seed');
    assert.equal(reject400(ImageGenerationRequestSchema, { ...gen, guidance: 'high' }).param, 'guidance');
  });
});

describe('parseSize', () => {
  it('gives 1024x1024 for auto or nothing', () => {
    assert.deepEqual(parseSize(), { width: 1024, height: 1024 });
    assert.deepEqual(parseSize('auto'), { width: 1024, height: 1024 });
  });
  it('reads WIDTHxHEIGHT', () => {
    assert.deepEqual(parseSize('512x1536'), { width: 512, height: 1536 });
    assert.deepEqual(parseSize('1536x768'), { width: 1536, height: 768 });
  });
  it('throws the 400 with param size for a bad value', () => {
    assert.throws(
      () => parseSize('1000x1000'),
      (e: unknown) => e instanceof ApiError && e.status === 400 && e.param === 'size',
    );
  });
});

describe('ImageEditRequestSchema (form fields)', () => {
  it('coerces numeric form strings and applies defaults', () => {
    const r = parseOrThrow(ImageEditRequestSchema, {
      prompt: 'add a hat',
      n: '2',
      seed: '42',
      guidance: '3.5',
      size: '1024x1536',
      model: 'image-model',
      response_format: 'b64_json',
    });
    assert.equal(r.n, 2);
    assert.equal(r.seed, 42);
    assert.equal(r.guidance, 3.5);
    assert.equal(r.response_format, 'b64_json');
    const d = parseOrThrow(ImageEditRequestSchema, { prompt: 'add a hat' });
    assert.equal(d.n, 1);
    assert.equal(d.response_format, 'url');
  });

  it('applies the generation rules and refuses mask', () => {
    const p = { prompt: 'add a hat' };
    assert.equal(reject400(ImageEditRequestSchema, {}).param, 'prompt');
    assert.equal(reject400(ImageEditRequestSchema, { ...p, n: '5' }).param, 'n');
    assert.equal(reject400(ImageEditRequestSchema, { ...p, n: 'two' }).param, 'n');
    assert.equal(reject400(ImageEditRequestSchema, { ...p, seed: '1.5' }).param, 'seed');
    assert.equal(reject400(ImageEditRequestSchema, { ...p, size: '100x100' }).param, 'size');
    assert.equal(
      reject400(ImageEditRequestSchema, { ...p, response_format: 'jpeg' }).param,
      'response_format',
    );
    const mask = reject400(ImageEditRequestSchema, { ...p, mask: 'mask.png' });
    assert.equal(mask.param, 'mask');
    assert.match(mask.message, /mask is not supported/);
    assert.equal(reject400(ImageEditRequestSchema, { ...p, stream: 'true' }).param, 'stream');
  });

  it('exports the input limits', () => {
    assert.equal(IMAGE_EDIT_MAX_IMAGES, 4);
    assert.equal(IMAGE_MAX_BYTES, 25 * 1024 * 1024);
  });
});

describe('ImageResponseSchema', () => {
  it('parses url and b64_json items, with an optional revised_prompt', () => {
    const r = ImageResponseSchema.parse({
      created: 1_700_000_000,
      data: [{ url: 'https://cdn.example/img.png' }, { b64_json: 'iVBORw0KGgo=', revised_prompt: 'a fox' }],
    });
    assert.equal(r.data.length, 2);
    assert.equal(ImageResponseSchema.safeParse({ created: 1, data: [{}] }).success, false);
  });
});
