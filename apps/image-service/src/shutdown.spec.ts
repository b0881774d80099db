import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import {
  CatalogEntrySchema,
  ImageServiceResultSchema,
  Queues,
  type ServiceRequest,
  Subjects,
} from '@infer/contracts';
import { connectNats, RpcClient } from '@infer/rpc';
import { Queue } from 'bullmq';
import { type ImageService, startImageService } from './app.js';
import { builtinImageEngineFactories } from './engines/builtin.js';
import type { ImageEngine } from './engines/engine.js';
import type { ImageEngineFactory } from './engines/registry.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const run = randomBytes(4).toString('hex');
const subjectPrefix = `test.${run}.`;
const env = {
  ...process.env,
  NATS_URL,
  REDIS_URL,
  LOG_LEVEL: 'silent',
  BULLMQ_PREFIX: `test-shutdown-${run}`,
  IMAGE_STORE: 'redis',
  IMAGE_STORE_REDIS_PREFIX: `test:shutdown:${run}:`,
};

/** A `simulator`-typed engine that never finishes on its own: it waits until its job is aborted. */
const hangingFactory: ImageEngineFactory = {
  type: 'simulator',
  create: (): ImageEngine => ({
    type: 'simulator',
    generate: (_input, signal) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      }),
  }),
};

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting until ${what}`);
}

describe('image worker shutdown (Nest provider of the worker role)', () => {
  const started: ImageService[] = [];
  after(async () => {
    for (const s of started) await s.stop().catch(() => undefined);
  });

  it('returns the job in progress to the queue, without using an attempt; another worker then finishes it', async () => {
    const api = await startImageService({ env, subjectPrefix, role: 'api' });
    started.push(api);
    const stuck = await startImageService({ env, subjectPrefix, role: 'worker', engines: [hangingFactory] });
    started.push(stuck);
    const queue = new Queue(Queues.imageJobs, { connection: { url: REDIS_URL }, prefix: env.BULLMQ_PREFIX });
    const nc = await connectNats(NATS_URL, 'image-shutdown-spec');
    try {
      const req: ServiceRequest = {
        requestId: randomUUID(),
        memberId: 'mem',
        keyId: 'key',
        model: CatalogEntrySchema.parse({
          id: 'image-model',
          kind: 'image',
          rank: 1,
          tiers: ['inference'],
          engine: { type: 'simulator' },
        }),
        body: { prompt: 'a lighthouse', n: 1, size: '256x256' },
        deadline: Date.now() + 30_000,
        stream: false,
      };
      const answer = new RpcClient(nc).call(`${subjectPrefix}${Subjects.imageGenerations}`, req, {
        idleTimeoutMs: 40_000,
      });
      await until('the stuck worker holds the job', async () => (await queue.getActiveCount()) === 1);
      const [job] = await queue.getJobs(['active']);
      assert.ok(job?.id);

      const t0 = Date.now();
      await stuck.stop();
      assert.ok(Date.now() - t0 < 5_000, 'the worker stopped promptly');
      const state = await queue.getJobState(job.id);
      assert.equal(state, 'waiting', 'the job is back in the wait list');
      const again = await queue.getJob(job.id);
      assert.equal(again?.attemptsMade, 0, 'the shutdown did not use up an attempt');

      const healthy = await startImageService({
        env,
        subjectPrefix,
        role: 'worker',
        engines: builtinImageEngineFactories,
      });
      started.push(healthy);
      const end = await answer;
      const result = ImageServiceResultSchema.parse(end.data);
      assert.equal(result.images.length, 1, 'the request that was waiting got its image');
    } finally {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await nc.close();
    }
  });
});
