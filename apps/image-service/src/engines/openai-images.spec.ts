import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ApiError, type CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { PNG } from 'pngjs';
import { type Answer, type FakeHttp, type Received, startFakeHttp } from '../testing/fake-http.js';
import type { ImageEngineInput } from './engine.js';
import { openaiImagesEngineFactory } from './openai-images.js';

const log = createLogger('test', 'silent');
const png = (w: number, h: number) => PNG.sync.write(new PNG({ width: w, height: h }));
const model = (engine: Record<string, unknown>) =>
  ({ id: 'image-model', kind: 'image', engine }) as unknown as CatalogEntry;
const input: ImageEngineInput = {
  operation: 'generation',
  prompt: 'a lighthouse at dusk',
  width: 512,
  height: 256,
  seed: 1234,
  seedRequested: true,
  guidance: 4.5,
  images: [],
};
const never = new AbortController().signal;

/** A LocalAI-like images API: b64_json answers with a PNG of the asked size, or scripted answers. */
let server: FakeHttp;
let script: ((r: Received) => Answer | Promise<Answer>) | null = null;
before(async () => {
  server = await startFakeHttp(async (r) => {
    if (script) return script(r);
    if (r.path === '/v1/images/generations') {
      const b = r.json() as { size: string };
      const [w, h] = b.size.split('x').map(Number);
      return { body: { created: 1, data: [{ b64_json: png(w!, h!).toString('base64') }] } };
    }
    if (r.path === '/v1/images/edits') {
      const f = await r.form();
      const [w, h] = String(f.get('size')).split('x').map(Number);
      return { body: { created: 1, data: [{ b64_json: png(w!, h!).toString('base64') }] } };
    }
    return { status: 404, body: { error: { message: 'no route' } } };
  });
});
after(() => server.close());
beforeEach(() => {
  script = null;
  server.received.length = 0;
});

const engine = (extra: Record<string, unknown> = {}) =>
  openaiImagesEngineFactory.create(
    { type: 'openai', base_url: `${server.url}/v1`, timeout_ms: 5_000, guidance_field: 'guidance', ...extra },
    { model: model({}), log },
  );

describe('openai images engine (LocalAI-style upstream)', () => {
  it('asks /images/generations for one b64_json image of the size, with seed and guidance', async () => {
    const out = await engine({ model: 'sd-upstream', guidance_field: 'cfg_scale' }).generate(input, never);
    const decoded = PNG.sync.read(out.bytes);
    assert.deepEqual([decoded.width, decoded.height], [512, 256]);
    const req = server.received[0]!;
    assert.equal(req.method, 'POST');
    assert.deepEqual(req.json(), {
      model: 'sd-upstream',
      prompt: 'a lighthouse at dusk',
      n: 1,
      size: '512x256',
      response_format: 'b64_json',
      seed: 1234,
      cfg_scale: 4.5,
    });
  });

  it('leaves seed and guidance out when the client did not set them; model defaults to the catalog id', async () => {
    await engine().generate({ ...input, seedRequested: false, guidance: null }, never);
    const body = server.received[0]!.json() as Record<string, unknown>;
    assert.equal(body.model, 'image-model');
    assert.ok(!('seed' in body) && !('guidance' in body));
  });

  it('sends edits as multipart: `image` for one, `image[]` for several, with their types', async () => {
    const a = png(8, 8);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 1]);
    await engine().generate(
      { ...input, operation: 'edit', images: [{ bytes: a, contentType: 'image/png' }] },
      never,
    );
    let form = await server.received[0]!.form();
    assert.equal(server.received[0]!.path, '/v1/images/edits');
    const one = form.get('image') as File;
    assert.equal(one.type, 'image/png');
    assert.ok(Buffer.from(await one.arrayBuffer()).equals(a));
    assert.equal(form.get('prompt'), 'a lighthouse at dusk');
    assert.equal(form.get('size'), '512x256');
    assert.equal(form.get('n'), '1');
    await engine().generate(
      {
        ...input,
        operation: 'edit',
        images: [
          { bytes: a, contentType: 'image/png' },
          { bytes: jpeg, contentType: 'image/jpeg' },
        ],
      },
      never,
    );
    form = await server.received[1]!.form();
    const many = form.getAll('image[]') as File[];
    assert.deepEqual(
      many.map((f) => f.type),
      ['image/png', 'image/jpeg'],
    );
  });

  it('follows a url answer', async () => {
    script = (r) =>
      r.path === '/files/out.png'
        ? { body: png(16, 16), headers: { 'content-type': 'image/png' } }
        : { body: { data: [{ url: `${server.url}/files/out.png` }] } };
    const out = await engine().generate(input, never);
    assert.equal(PNG.sync.read(out.bytes).width, 16);
  });

  it('sends the upstream key from the named environment variable, and refuses to start without it', async () => {
    process.env.TEST_IMG_KEY = 'sk-upstream-test';
    await engine({ api_key_env: 'TEST_IMG_KEY' }).generate(input, never);
    assert.equal(server.received[0]!.headers.authorization, 'Bearer sk-upstream-test');
    delete process.env.TEST_IMG_KEY;
    assert.throws(() => engine({ api_key_env: 'TEST_IMG_KEY' }), /TEST_IMG_KEY/);
  });

  it('passes an upstream content-policy refusal on as 400 content_policy_violation', async () => {
    script = () => ({
      status: 400,
      body: {
        error: {
          code: 'content_policy_violation',
          message: 'Blocked by upstream.',
          type: 'invalid_request_error',
        },
      },
    });
    await assert.rejects(engine().generate(input, never), (e: ApiError) => {
      assert.equal(e.status, 400);
      assert.equal(e.code, 'content_policy_violation');
      assert.equal(e.param, 'prompt');
      return true;
    });
  });

  it('turns other upstream failures into a clean 500, and silence into 524', async () => {
    script = () => ({ status: 503, body: { error: { message: 'GPU on fire at /srv/models' } } });
    await assert.rejects(engine().generate(input, never), (e: ApiError) => {
      assert.equal(e.status, 500);
      assert.doesNotMatch(e.message, /GPU|srv/);
      return true;
    });
    script = () => ({ body: { data: [] } });
    await assert.rejects(engine().generate(input, never), { status: 500 });
    script = () => ({ body: { data: [{}] }, delayMs: 2_000 });
    await assert.rejects(engine({ timeout_ms: 100 }).generate(input, never), { status: 524 });
  });

  it('stops at once when the job is cancelled', async () => {
    script = () => ({ body: { data: [] }, delayMs: 3_000 });
    const ac = new AbortController();
    const t = performance.now();
    setTimeout(() => ac.abort(new ApiError(499, 'cancelled')), 50);
    await assert.rejects(engine().generate(input, ac.signal), { status: 499 });
    assert.ok(performance.now() - t < 2_500, 'before the 3 s upstream answer (slack for a busy machine)');
  });

  it('refuses invalid settings with a 500 naming the model', () => {
    assert.throws(
      () =>
        openaiImagesEngineFactory.create(
          { type: 'openai', base_url: 'not a url' },
          { model: model({}), log },
        ),
      (e: ApiError) => e.status === 500 && /image-model/.test(e.message) && /base_url/.test(e.message),
    );
  });
});
