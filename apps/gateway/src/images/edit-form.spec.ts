import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import multipart from '@fastify/multipart';
import { ApiError } from '@infer/contracts';
import Fastify, { type FastifyInstance } from 'fastify';
import { PNG } from 'pngjs';
import { readEditForm } from './edit-form.js';

const png = PNG.sync.write(new PNG({ width: 2, height: 2 }));
const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 1, 2]);

/** A bare Fastify with the gateway's multipart settings and one route that reads the edit form. */
let app: FastifyInstance;
let url: string;
before(async () => {
  app = Fastify();
  await app.register(multipart, {
    limits: { fileSize: 1024 + 1, files: 8, fields: 32, fieldSize: 1024 * 1024 },
    throwFileSizeLimit: false,
  });
  app.post('/edits', async (req, reply) => {
    try {
      const form = await readEditForm(req);
      return {
        fields: form.fields,
        types: form.images.map((i) => i.contentType),
        sizes: form.images.map((i) => i.bytes.length),
        dropped: form.dropped,
      };
    } catch (e) {
      const err = e as ApiError;
      return reply
        .code(err.status ?? 500)
        .send({ status: err.status, param: err.param, message: err.message });
    }
  });
  url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/edits`;
});
after(() => app.close());

const file = (b: Buffer, type = 'application/octet-stream') => new Blob([b], { type });
async function post(build: (f: FormData) => void) {
  const f = new FormData();
  build(f);
  const res = await fetch(url, { method: 'POST', body: f });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

// The 25 MB rule is exercised at scale in test/integration/images.spec.ts; here the plugin's limit is
// 1 KiB + 1 to show that `truncated` is what reports it.
describe('readEditForm (multipart of POST /v1/images/edits)', () => {
  it('collects text fields and image parts named image, image[] or image[N], typed by content', async () => {
    const r = await post((f) => {
      f.append('prompt', 'hello');
      f.append('n', '2');
      f.append('image', file(png, 'text/plain'), 'a.txt');
      f.append('image[]', file(jpeg), 'b');
      f.append('image[2]', file(png), 'c.png');
      f.append('extra', file(Buffer.from('ignored')), 'x.bin');
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.fields, { prompt: 'hello', n: '2' });
    assert.deepEqual(r.body.types, ['image/png', 'image/jpeg', 'image/png']);
  });

  it('keeps the first four images and drops the rest', async () => {
    const r = await post((f) => {
      for (let i = 0; i < 6; i++) f.append('image[]', file(i < 4 ? png : jpeg), `${i}.png`);
    });
    assert.deepEqual(r.body.types, ['image/png', 'image/png', 'image/png', 'image/png']);
    assert.equal(r.body.dropped, 2);
  });

  it('400 param mask for a mask file or field, even after valid images', async () => {
    for (const build of [
      (f: FormData) => f.append('mask', file(png), 'm.png'),
      (f: FormData) => f.append('mask', 'anything'),
    ]) {
      const r = await post((f) => {
        f.append('image', file(png), 'a.png');
        build(f);
        f.append('prompt', 'p');
      });
      assert.deepEqual([r.status, r.body.param], [400, 'mask']);
    }
  });

  it('400 param image for a non-image, an empty file, a text field named image, a too-large file, none at all', async () => {
    const cases: Array<[string, (f: FormData) => void, RegExp]> = [
      [
        'gif',
        (f) => f.append('image', file(Buffer.from('GIF89a....'), 'image/png'), 'x.png'),
        /not a PNG, JPEG or WebP/,
      ],
      ['empty', (f) => f.append('image', file(Buffer.alloc(0)), 'e.png'), /not a PNG/],
      ['text', (f) => f.append('image', 'data:image/png;base64,AAAA'), /must be a file/],
      [
        'big',
        (f) => f.append('image', file(Buffer.concat([png, Buffer.alloc(2000)])), 'big.png'),
        /too large/,
      ],
      ['none', (f) => f.append('prompt', 'p'), /Missing required parameter: 'image'/],
    ];
    for (const [name, build, message] of cases) {
      const r = await post(build);
      assert.deepEqual([r.status, r.body.param], [400, 'image'], name);
      assert.match(String(r.body.message), message, name);
    }
  });

  it('400 param image for more files than the form allows; 415 when the body is not multipart', async () => {
    const r = await post((f) => {
      for (let i = 0; i < 9; i++) f.append('image[]', file(png), `${i}.png`);
    });
    assert.deepEqual([r.status, r.body.param], [400, 'image']);
    const json = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'p', image: 'x' }),
    });
    assert.equal(json.status, 415);
  });
});
