/**
 * Images through the gateway with the official openai SDK: POST /v1/images/generations and
 * /v1/images/edits served by the image-service (api role answering NATS, BullMQ jobs run by its worker
 * role) on the simulator engine (a test double that renders deterministic PNGs), results kept in the
 * image store and served at signed, expiring URLs.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ErrorBodySchema, ImageResponseSchema } from '@infer/contracts';
import { Redis } from 'ioredis';
import OpenAI, { toFile } from 'openai';
import { PNG } from 'pngjs';
import { stringify } from 'yaml';
import { CLOCK, type Clock } from '../../apps/gateway/src/images/clock.js';
import { ImageDelivery } from '../../apps/gateway/src/images/image-delivery.service.js';
import { type ImageService, startImageService } from '../../apps/image-service/src/app.js';
import { waitFor } from '../support/wait-for.js';
import { apiError, type Stack, startStack } from './harness.js';

const run = randomBytes(4).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'infer-images-'));
const policyFile = join(dir, 'policy.yaml');
writeFileSync(
  policyFile,
  stringify({ blocked_terms: ['forbidden thing'], blocked_patterns: ['\\bnope\\d+\\b'] }),
);

/** The environment of one stack: its own NATS subjects, BullMQ prefix and store keys. */
function stackEnv(extra: Record<string, string> = {}): Record<string, string> {
  const id = randomBytes(4).toString('hex');
  return {
    MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
    BULLMQ_PREFIX: `test-images-${id}`,
    IMAGE_STORE_REDIS_PREFIX: `test:images:${id}:`,
    IMAGE_CONTENT_POLICY_FILE: policyFile,
    ...extra,
  };
}

/** A stack with the image-service (both roles in one process); close() also clears its queue and images. */
async function startWithImages(env: Record<string, string>): Promise<Stack> {
  let image: ImageService | undefined;
  const stack = await startStack({
    env,
    services: [
      async (e) => {
        image = await startImageService({ env: e, subjectPrefix: e.MODEL_SUBJECT_PREFIX });
        return image;
      },
    ],
  });
  const close = stack.close;
  stack.close = async () => {
    await image?.queue.obliterate({ force: true }).catch(() => undefined);
    await close();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${env.IMAGE_STORE_REDIS_PREFIX}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  };
  return stack;
}

const decode = (b64: string) => PNG.sync.read(Buffer.from(b64, 'base64'));
const pngFile = (w: number, h: number, fill = 200) => {
  const p = new PNG({ width: w, height: h });
  p.data.fill(fill);
  return PNG.sync.write(p);
};
const JPEG = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]),
  Buffer.from('JFIF fake jpeg body'),
]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 fake webp body')]);

/** The SDK's types do not know the service extensions (seed, guidance): they are sent as given. */
type GenerateParams = OpenAI.Images.ImageGenerateParamsNonStreaming & { seed?: number; guidance?: number };
type EditParams = OpenAI.Images.ImageEditParamsNonStreaming & { seed?: number; guidance?: number };

describe('images through the gateway (openai SDK, image-service on the simulator engine)', () => {
  let stack: Stack;
  let client: OpenAI;
  const generate = (p: GenerateParams) =>
    client.images.generate(p as OpenAI.Images.ImageGenerateParamsNonStreaming);
  const edit = (p: EditParams) => client.images.edit(p as OpenAI.Images.ImageEditParamsNonStreaming);

  before(async () => {
    stack = await startWithImages(stackEnv());
    client = stack.client('inference');
  });
  after(async () => {
    await stack?.close();
  });

  describe('POST /v1/images/generations', () => {
    it('answers with one temporary URL by default (image-model, 1024x1024) that serves the PNG without a key', async () => {
      const res = await generate({ prompt: 'a red fox in the snow' });
      ImageResponseSchema.parse(res);
      assert.ok(Number.isInteger(res.created) && Math.abs(res.created - Date.now() / 1000) < 60);
      assert.equal(res.data?.length, 1);
      const url = new URL(res.data![0]!.url!);
      assert.equal(url.origin, stack.url, 'default public base: the listening address');
      assert.match(url.pathname, /^\/v1\/images\/files\/img_[A-Za-z0-9_-]+\.png$/);
      const expires = Number(url.searchParams.get('expires'));
      assert.ok(Math.abs(expires - Date.now() / 1000 - 3600) < 60, 'valid about 60 minutes');
      const got = await fetch(url);
      assert.equal(got.status, 200);
      assert.equal(got.headers.get('content-type'), 'image/png');
      const png = PNG.sync.read(Buffer.from(await got.arrayBuffer()));
      assert.deepEqual([png.width, png.height], [1024, 1024]);
    });

    it('returns n b64_json images of the requested size', async () => {
      const res = await generate({
        prompt: 'three foxes',
        n: 3,
        size: '512x768' as never,
        response_format: 'b64_json',
      });
      assert.equal(res.data?.length, 3);
      const bytes = res.data!.map((d) => d.b64_json!);
      for (const b64 of bytes) {
        const png = decode(b64);
        assert.deepEqual([png.width, png.height], [512, 768]);
      }
      assert.equal(new Set(bytes).size, 3, 'variants differ');
    });

    it('is reproducible: the same seed gives identical bytes; variant i starts from seed + i', async () => {
      const base = { prompt: 'a lighthouse', size: '256x256' as never, response_format: 'b64_json' as const };
      const a = await generate({ ...base, seed: 1234 });
      const b = await generate({ ...base, seed: 1234 });
      assert.equal(a.data![0]!.b64_json, b.data![0]!.b64_json);
      const pair = await generate({ ...base, n: 2, seed: 1234 });
      const next = await generate({ ...base, seed: 1235 });
      assert.equal(pair.data![0]!.b64_json, a.data![0]!.b64_json);
      assert.equal(pair.data![1]!.b64_json, next.data![0]!.b64_json);
      assert.notEqual(pair.data![0]!.b64_json, pair.data![1]!.b64_json);
      const other = await generate({ ...base, seed: 1234, guidance: 9 });
      assert.notEqual(other.data![0]!.b64_json, a.data![0]!.b64_json, 'guidance reaches the engine');
    });

    it('takes every valid size: auto, the extremes, the widest aspect ratios', async () => {
      const sizes: Array<[string, [number, number]]> = [
        ['auto', [1024, 1024]],
        ['256x768', [256, 768]],
        ['1536x512', [1536, 512]],
      ];
      for (const [size, [w, h]] of sizes) {
        const res = await generate({ prompt: 'p', size: size as never, response_format: 'b64_json' });
        const png = decode(res.data![0]!.b64_json!);
        assert.deepEqual([png.width, png.height], [w, h], size);
      }
    });

    it('refuses sizes outside the rules with 400 param size', async () => {
      for (const size of ['1000x1000', '128x128', '1552x1552', '1536x256', '256x1536', 'big', '1024x']) {
        const e = await apiError(generate({ prompt: 'p', size: size as never }));
        assert.equal(e.status, 400, size);
        assert.equal(e.code, 'invalid_request_error');
        assert.equal(e.param, 'size', size);
      }
    });

    it('refuses n outside 1..4 (param n), a missing prompt, a bad response_format, a negative guidance', async () => {
      for (const n of [5, 0, 2.5]) {
        const e = await apiError(generate({ prompt: 'p', n }));
        assert.deepEqual([e.status, e.param], [400, 'n'], String(n));
      }
      let e = await apiError(generate({} as GenerateParams));
      assert.deepEqual([e.status, e.param], [400, 'prompt']);
      e = await apiError(generate({ prompt: '' }));
      assert.deepEqual([e.status, e.param], [400, 'prompt']);
      e = await apiError(generate({ prompt: 'p', response_format: 'xml' as never }));
      assert.deepEqual([e.status, e.param], [400, 'response_format']);
      e = await apiError(generate({ prompt: 'p', guidance: -1 }));
      assert.deepEqual([e.status, e.param], [400, 'guidance']);
      e = await apiError(generate({ prompt: 'p', seed: 1.5 }));
      assert.deepEqual([e.status, e.param], [400, 'seed']);
    });

    it('refuses stream: true with 400 param stream', async () => {
      const e = await apiError(client.images.generate({ prompt: 'p', stream: true }));
      assert.deepEqual([e.status, e.param], [400, 'stream']);
    });

    it('accepts and ignores quality, style, background, moderation, output_format, output_compression, user', async () => {
      const res = await generate({
        prompt: 'p',
        size: '256x256' as never,
        quality: 'hd',
        style: 'vivid',
        background: 'transparent',
        moderation: 'low',
        output_format: 'jpeg',
        output_compression: 50,
        user: 'someone',
        stream: false,
      } as GenerateParams);
      const got = await fetch(res.data![0]!.url!);
      assert.equal(got.headers.get('content-type'), 'image/png', 'output_format ignored');
    });

    it('404 model_not_found for an unknown model; 400 param model for a model of another kind', async () => {
      let e = await apiError(generate({ prompt: 'p', model: 'no-such-model' }));
      assert.deepEqual([e.status, e.code, e.param], [404, 'model_not_found', 'model']);
      e = await apiError(generate({ prompt: 'p', model: 'chat-F' }));
      assert.deepEqual([e.status, e.param], [400, 'model']);
      const ok = await generate({ prompt: 'p', model: 'image-model', size: '256x256' as never });
      assert.equal(ok.data?.length, 1);
    });

    it('refuses prompts the operator policy blocks: 400 content_policy_violation, param prompt', async () => {
      for (const prompt of ['a Forbidden  Thing in a box', 'code nope42 here']) {
        const e = await apiError(generate({ prompt }));
        assert.equal(e.status, 400);
        assert.equal(e.code, 'content_policy_violation');
        assert.equal(e.param, 'prompt');
      }
    });

    it('community keys get 403 tier_restricted; no key gets 401', async () => {
      const e = await apiError(stack.client('community').images.generate({ prompt: 'p' }));
      assert.deepEqual([e.status, e.code], [403, 'tier_restricted']);
      assert.equal((e.error as { type?: string }).type, 'permission_error');
      const premium = await stack
        .client('premium')
        .images.generate({ prompt: 'p', size: '256x256' as never });
      assert.equal(premium.data?.length, 1);
      const anon = await fetch(`${stack.baseURL}/images/generations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'p' }),
      });
      assert.equal(anon.status, 401);
    });
  });

  describe('POST /v1/images/edits', () => {
    it('edits one PNG (image) and returns images of the requested size', async () => {
      const res = await edit({
        image: await toFile(pngFile(64, 64), 'in.png', { type: 'image/png' }),
        prompt: 'make it blue',
        n: 2,
        size: '512x256' as never,
        response_format: 'b64_json',
      });
      assert.equal(res.data?.length, 2);
      for (const d of res.data!) {
        const png = decode(d.b64_json!);
        assert.deepEqual([png.width, png.height], [512, 256]);
      }
    });

    it('takes image[] (PNG, JPEG, WebP by content), uses the first 4 and drops the rest', async () => {
      const files = async (bufs: Buffer[]) =>
        Promise.all(bufs.map((b, i) => toFile(b, `f${i}.bin`, { type: 'application/octet-stream' })));
      const four = [pngFile(8, 8, 10), JPEG, WEBP, pngFile(8, 8, 40)];
      const base = {
        prompt: 'combine',
        size: '256x256' as never,
        response_format: 'b64_json' as const,
        seed: 7,
      };
      const withFour = await edit({ ...base, image: await files(four) });
      const withSix = await edit({ ...base, image: await files([...four, pngFile(8, 8, 99), JPEG]) });
      assert.equal(withSix.data![0]!.b64_json, withFour.data![0]!.b64_json, 'images 5 and 6 were dropped');
      const withThree = await edit({ ...base, image: await files(four.slice(0, 3)) });
      assert.notEqual(withThree.data![0]!.b64_json, withFour.data![0]!.b64_json, 'image 4 was used');
    });

    it('is reproducible with a seed; the input image matters', async () => {
      const base = { prompt: 'p', size: '256x256' as never, response_format: 'b64_json' as const, seed: 3 };
      const a = await edit({ ...base, image: await toFile(pngFile(16, 16, 0), 'a.png') });
      const b = await edit({ ...base, image: await toFile(pngFile(16, 16, 0), 'a.png') });
      const c = await edit({ ...base, image: await toFile(pngFile(16, 16, 255), 'a.png') });
      assert.equal(a.data![0]!.b64_json, b.data![0]!.b64_json);
      assert.notEqual(a.data![0]!.b64_json, c.data![0]!.b64_json);
    });

    it('answers url by default, served like generations', async () => {
      const res = await edit({
        image: await toFile(JPEG, 'photo.jpg'),
        prompt: 'p',
        size: '256x512' as never,
      });
      const got = await fetch(res.data![0]!.url!);
      assert.equal(got.status, 200);
      const png = PNG.sync.read(Buffer.from(await got.arrayBuffer()));
      assert.deepEqual([png.width, png.height], [256, 512]);
    });

    it('refuses a mask with 400 param mask', async () => {
      const e = await apiError(
        edit({
          image: await toFile(pngFile(8, 8), 'in.png'),
          mask: await toFile(pngFile(8, 8), 'mask.png'),
          prompt: 'p',
        }),
      );
      assert.deepEqual([e.status, e.code, e.param], [400, 'invalid_request_error', 'mask']);
    });

    it('refuses a file that is not PNG, JPEG or WebP (whatever its name and type) with 400 param image', async () => {
      const e = await apiError(
        edit({
          image: await toFile(Buffer.from('GIF89a not really'), 'fake.png', { type: 'image/png' }),
          prompt: 'p',
        }),
      );
      assert.deepEqual([e.status, e.param], [400, 'image']);
      const text = await apiError(
        edit({ image: await toFile(Buffer.from('hello'), 'notes.txt'), prompt: 'p' }),
      );
      assert.deepEqual([text.status, text.param], [400, 'image']);
    });

    it('applies the generation rules to the form fields (n, size, response_format, seed, prompt, model)', async () => {
      const image = await toFile(pngFile(8, 8), 'in.png');
      const cases: Array<[Partial<EditParams>, number, string]> = [
        [{ n: 5 }, 400, 'n'],
        [{ size: '100x100' as never }, 400, 'size'],
        [{ response_format: 'xml' as never }, 400, 'response_format'],
        [{ seed: 'abc' as never }, 400, 'seed'],
        [{ prompt: undefined }, 400, 'prompt'],
        [{ model: 'no-such-model' }, 404, 'model'],
      ];
      for (const [extra, status, param] of cases) {
        const e = await apiError(edit({ image, prompt: 'p', ...extra } as EditParams));
        assert.deepEqual([e.status, e.param], [status, param], JSON.stringify(extra));
      }
    });

    it('400 param image for a missing image, an oversized one (over 25 MB) and too many files', async () => {
      const post = (form: FormData) =>
        fetch(`${stack.baseURL}/images/edits`, {
          method: 'POST',
          headers: { authorization: `Bearer ${stack.keys.inference}` },
          body: form,
        });
      let form = new FormData();
      form.append('prompt', 'p');
      let res = await post(form);
      let body = ErrorBodySchema.parse(await res.json());
      assert.deepEqual([res.status, body.error.param], [400, 'image']);

      form = new FormData();
      form.append('prompt', 'p');
      const big = Buffer.alloc(25 * 1024 * 1024 + 100);
      pngFile(4, 4).copy(big);
      form.append('image', new Blob([big], { type: 'image/png' }), 'big.png');
      res = await post(form);
      body = ErrorBodySchema.parse(await res.json());
      assert.deepEqual([res.status, body.error.param], [400, 'image']);
      assert.match(body.error.message, /25 MB/);

      form = new FormData();
      form.append('prompt', 'p');
      for (let i = 0; i < 9; i++)
        form.append('image[]', new Blob([pngFile(4, 4)], { type: 'image/png' }), `${i}.png`);
      res = await post(form);
      body = ErrorBodySchema.parse(await res.json());
      assert.deepEqual([res.status, body.error.param], [400, 'image']);
    });

    it('community keys get 403 tier_restricted', async () => {
      const e = await apiError(
        stack.client('community').images.edit({ image: await toFile(pngFile(8, 8), 'in.png'), prompt: 'p' }),
      );
      assert.deepEqual([e.status, e.code], [403, 'tier_restricted']);
    });

    it('removes the uploaded inputs from the store once the request is answered', async () => {
      const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
      try {
        await edit({ image: await toFile(pngFile(8, 8), 'in.png'), prompt: 'p', size: '256x256' as never });
        const prefix = stack.gateway.config.IMAGE_STORE_REDIS_PREFIX;
        // The deletion runs as the request ends: poll for it under a deadline rather than sleeping.
        await waitFor(
          'the uploads to be removed',
          async () => (await redis.keys(`${prefix}upl_*`)).length === 0,
        );
      } finally {
        redis.disconnect();
      }
    });
  });

  describe('GET /v1/images/files/<id> (signed URLs)', () => {
    let clock: Clock;
    let realNow: () => number;
    before(() => {
      clock = stack.gateway.app.get<Clock>(CLOCK);
      realNow = clock.now;
    });
    after(() => {
      clock.now = realNow;
    });

    it('stops working when the URL expires (410 with the Error body), by the gateway clock', async () => {
      const res = await generate({ prompt: 'expiring', size: '256x256' as never });
      const url = res.data![0]!.url!;
      assert.equal((await fetch(url)).status, 200);
      clock.now = () => Date.now() + 59 * 60_000;
      const late = await fetch(url);
      assert.equal(late.status, 200, 'still valid at 59 minutes');
      assert.match(late.headers.get('cache-control') ?? '', /max-age=\d{1,2}$/);
      clock.now = () => Date.now() + 61 * 60_000;
      const gone = await fetch(url);
      assert.equal(gone.status, 410);
      const body = ErrorBodySchema.parse(await gone.json());
      assert.equal(body.error.code, 'image_expired');
      clock.now = realNow;
      assert.equal((await fetch(url)).status, 200, 'it was the clock');
    });

    it('404 for a tampered signature, expiry or id (the signature covers both)', async () => {
      const res = await generate({ prompt: 'tamper', size: '256x256' as never });
      const url = new URL(res.data![0]!.url!);
      const variants = [
        (u: URL) => u.searchParams.set('sig', `${u.searchParams.get('sig')!.slice(0, -2)}AA`),
        (u: URL) => u.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600)),
        (u: URL) => {
          u.pathname = u.pathname.replace(/img_[^.]+/, `img_${randomBytes(24).toString('base64url')}`);
        },
        (u: URL) => u.searchParams.delete('sig'),
        (u: URL) => {
          u.pathname = '/v1/images/files/upl_abcdefghijklmnop.png';
        },
      ];
      for (const change of variants) {
        const u = new URL(url);
        change(u);
        const got = await fetch(u);
        assert.equal(got.status, 404, u.href);
        const body = ErrorBodySchema.parse(await got.json());
        assert.equal(body.error.code, 'image_not_found');
      }
    });

    it('410 when the store no longer has the image, though the URL is still signed and unexpired', async () => {
      const res = await generate({ prompt: 'deleted', size: '256x256' as never });
      const url = new URL(res.data![0]!.url!);
      const id = url.pathname
        .split('/')
        .pop()!
        .replace(/\.png$/, '');
      await stack.gateway.app.get(ImageDelivery).store.delete(id);
      const got = await fetch(url);
      assert.equal(got.status, 410);
      assert.equal(ErrorBodySchema.parse(await got.json()).error.code, 'image_expired');
    });
  });
});

describe('images: public base URL and the image budget', () => {
  let stack: Stack;
  before(async () => {
    const limits = join(dir, 'limits.yaml');
    writeFileSync(limits, stringify({ images: { requests_per_minute: 2 } }));
    stack = await startWithImages(
      stackEnv({
        PUBLIC_BASE_URL: 'https://images.example.test/',
        LIMITS_ENABLED: '1',
        LIMITS_FILE: limits,
        LIMITS_REDIS_PREFIX: `test:images-lim:${run}:`,
      }),
    );
  });
  after(async () => {
    await stack?.close();
  });

  it('builds URLs on PUBLIC_BASE_URL and counts one request as one use whatever n is (429 after 2)', async () => {
    const client = stack.client('inference');
    const first = await client.images.generate({ prompt: 'p', n: 4, size: '256x256' as never });
    assert.equal(first.data?.length, 4);
    for (const d of first.data!)
      assert.match(d.url!, /^https:\/\/images\.example\.test\/v1\/images\/files\/img_/);
    await client.images.generate({ prompt: 'p', n: 4, size: '256x256' as never });
    const e = await apiError(client.images.generate({ prompt: 'p', n: 1, size: '256x256' as never }));
    assert.equal(e.status, 429);
    assert.match(e.message, /image/i, 'the image budget, not another limit');
  });
});
