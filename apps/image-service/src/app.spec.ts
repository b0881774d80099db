import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ApiError,
  type CatalogEntryInput,
  CatalogEntrySchema,
  type ImageServiceResult,
  ImageServiceResultSchema,
  type ServiceRequest,
  Subjects,
} from '@infer/contracts';
import { connectNats, type NatsConnection, RpcClient } from '@infer/rpc';
import { Redis } from 'ioredis';
import { PNG } from 'pngjs';
import { type ImageService, startImageService } from './app.js';
import type { ImageJobResult } from './jobs/jobs.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const run = randomBytes(4).toString('hex');
const subjectPrefix = `test.${run}.`;
const policyFile = join(tmpdir(), `image-policy-${run}.yaml`);
await writeFile(policyFile, 'blocked_terms: [forbidden]\n');
const env = {
  ...process.env,
  NATS_URL,
  REDIS_URL,
  LOG_LEVEL: 'silent',
  BULLMQ_PREFIX: `test-img-${run}`,
  IMAGE_STORE: 'redis',
  IMAGE_STORE_REDIS_PREFIX: `test:img:${run}:`,
  IMAGE_CONTENT_POLICY_FILE: policyFile,
};
const model = (engine: CatalogEntryInput['engine'] = { type: 'simulator' }) =>
  CatalogEntrySchema.parse({ id: 'image-model', kind: 'image', rank: 1, tiers: ['inference'], engine });
const envelope = (body: unknown, m = model(), deadlineMs = 20_000): ServiceRequest => ({
  requestId: randomUUID(),
  memberId: 'mem',
  keyId: 'key',
  model: m,
  body,
  deadline: Date.now() + deadlineMs,
  stream: false,
});

/** The api role and the worker role as two separate instances: requests reach the worker only through BullMQ. */
describe('image-service: api role + worker role over NATS and BullMQ', () => {
  let api: ImageService;
  let worker: ImageService;
  let nc: NatsConnection;
  let rpc: RpcClient;
  let redis: Redis;
  const gen = () => `${subjectPrefix}${Subjects.imageGenerations}`;
  const edits = () => `${subjectPrefix}${Subjects.imageEdits}`;
  const call = (subject: string, req: ServiceRequest) => rpc.call(subject, req, { idleTimeoutMs: 30_000 });
  const result = (data: unknown): ImageServiceResult => ImageServiceResultSchema.parse(data);

  before(async () => {
    api = await startImageService({ env, subjectPrefix, role: 'api' });
    worker = await startImageService({ env, subjectPrefix, role: 'worker' });
    nc = await connectNats(NATS_URL, 'image-app-spec');
    rpc = new RpcClient(nc);
    redis = new Redis(REDIS_URL);
  });
  after(async () => {
    await api?.queue.obliterate({ force: true }).catch(() => undefined);
    await api?.stop();
    await worker?.stop();
    await nc?.close();
    const keys = await redis.keys(`test:img:${run}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('has one role each: the api answers NATS without a worker, the worker has no subjects', () => {
    assert.equal(api.worker, null);
    assert.ok(api.subjects);
    assert.ok(worker.worker);
    assert.equal(worker.subjects, null);
  });

  it('generates n images in one job: stored PNGs of the size, ids and expiry in the result', async () => {
    const end = await call(gen(), envelope({ prompt: 'a red fox', n: 3, size: '512x256', seed: 9 }));
    const r = result(end.data);
    assert.equal(r.response_format, 'url');
    assert.equal(r.images.length, 3);
    assert.equal(new Set(r.images.map((i) => i.id)).size, 3);
    const now = Math.floor(Date.now() / 1000);
    for (const ref of r.images) {
      assert.deepEqual([ref.width, ref.height, ref.content_type], [512, 256, 'image/png']);
      assert.ok(ref.expires_at > now + 3_500 && ref.expires_at <= now + 3_601);
      const stored = await api.store.get(ref.id);
      assert.ok(stored);
      const png = PNG.sync.read(stored.bytes);
      assert.deepEqual([png.width, png.height], [512, 256]);
    }
    assert.deepEqual(end.usage, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('is reproducible with a seed; variant i uses seed + i', async () => {
    const a = result((await call(gen(), envelope({ prompt: 'p', n: 2, size: '256x256', seed: 100 }))).data);
    const b = result((await call(gen(), envelope({ prompt: 'p', n: 1, size: '256x256', seed: 101 }))).data);
    const bytes = async (id: string) => (await api.store.get(id))!.bytes;
    assert.ok(
      (await bytes(a.images[1]!.id)).equals(await bytes(b.images[0]!.id)),
      'variant 1 of seed 100 = seed 101',
    );
    assert.ok(!(await bytes(a.images[0]!.id)).equals(await bytes(a.images[1]!.id)));
  });

  it('keeps b64_json results only briefly (the gateway reads them at once)', async () => {
    const r = result(
      (await call(gen(), envelope({ prompt: 'p', response_format: 'b64_json', size: '256x256' }))).data,
    );
    assert.equal(r.response_format, 'b64_json');
    const ttl = await redis.pttl(`test:img:${run}:${r.images[0]!.id}`);
    assert.ok(ttl > 200_000 && ttl <= 300_000, String(ttl));
  });

  it('runs edits on the input images the gateway stored', async () => {
    const input = new PNG({ width: 8, height: 8 });
    input.data.fill(255);
    const id = `upl_${randomBytes(12).toString('base64url')}`;
    await api.store.put(id, PNG.sync.write(input), 'image/png', 60);
    const body = {
      prompt: 'make it red',
      size: '256x256',
      images: [{ id, content_type: 'image/png', bytes: 100 }],
    };
    const r = result((await call(edits(), envelope(body))).data);
    const png = PNG.sync.read((await api.store.get(r.images[0]!.id))!.bytes);
    assert.equal(png.width, 256);
    // An input that is gone is a 400 on param image.
    const gone = { ...body, images: [{ id: 'upl_missingmissing', content_type: 'image/png', bytes: 1 }] };
    await assert.rejects(
      call(edits(), envelope(gone)),
      (e: ApiError) => e.status === 400 && e.param === 'image',
    );
  });

  it('applies the operator content policy before queueing (400 content_policy_violation)', async () => {
    const before = await api.queue.getJobCounts();
    await assert.rejects(call(gen(), envelope({ prompt: 'something Forbidden here' })), (e: ApiError) => {
      assert.equal(e.status, 400);
      assert.equal(e.code, 'content_policy_violation');
      assert.equal(e.param, 'prompt');
      return true;
    });
    const afterCounts = await api.queue.getJobCounts();
    assert.equal(afterCounts.completed, before.completed, 'no job was queued');
  });

  it('validates the body again (400 with param) and refuses unknown engine types (500 naming the model)', async () => {
    await assert.rejects(call(gen(), envelope({ prompt: 'p', size: '100x100' })), {
      status: 400,
      param: 'size',
    });
    await assert.rejects(call(gen(), envelope({ prompt: 'p', n: 5 })), { status: 400, param: 'n' });
    await assert.rejects(
      call(gen(), envelope({ prompt: 'p' }, model({ type: 'dall-e-local' }))),
      (e: ApiError) => e.status === 500 && /image-model/.test(e.message) && /dall-e-local/.test(e.message),
    );
    // Bad settings of a known type fail in the worker, as a 500 naming the model.
    await assert.rejects(
      call(gen(), envelope({ prompt: 'p' }, model({ type: 'comfyui', base_url: 'http://127.0.0.1:1' }))),
      (e: ApiError) => e.status === 500 && /image-model/.test(e.message),
    );
  });

  it('gives 524 at the deadline and the worker stops the job', async () => {
    const slow = model({ type: 'simulator', ttft_ms: 10_000 });
    const t = performance.now();
    await assert.rejects(call(gen(), envelope({ prompt: 'slow', n: 4 }, slow, 400)), { status: 524 });
    assert.ok(performance.now() - t < 5_000);
    await waitFor(async () => (await api.queue.getJobCounts('active')).active === 0);
  });

  it('cancels the job at the worker when the client goes away (cancel subject -> Redis channel)', async () => {
    const slow = model({ type: 'simulator', ttft_ms: 10_000 });
    const req = envelope({ prompt: 'slow', n: 1 }, slow);
    const p = call(gen(), req).catch((e) => e);
    await waitFor(async () => (await api.queue.getJobCounts('active')).active === 1);
    const t = performance.now();
    nc.publish(Subjects.cancel, req.requestId);
    await p;
    let jobResult: ImageJobResult | undefined;
    await waitFor(async () => {
      const [job] = await api.queue.getJobs(['completed'], 0, 0);
      jobResult = job?.data.requestId === req.requestId ? (job.returnvalue as ImageJobResult) : undefined;
      return Boolean(jobResult);
    });
    assert.ok(performance.now() - t < 3_000, 'stopped long before the 10 s image');
    assert.deepEqual(jobResult && !jobResult.ok && jobResult.error.status, 499);
  });
});

async function waitFor(cond: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail('condition not met in time');
}
