import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { createRedisClient, failFastRedisOptions } from '@infer/rpc';
import type { GatewayConfig } from '../config.js';
import { BullQueues } from './bull-queues.service.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * BullMQ's queues beside the gateway's auto-pipelined Redis client, on a real Redis: the queues run on the
 * connection of their own that withoutAutoPipelining() makes from the gateway's lazily connected,
 * fail-fast client (why: libs/rpc/src/redis-pipelining.spec.ts), and work while the gateway's traffic
 * keeps the shared client's pipelines busy.
 */
describe('BullQueues beside the auto-pipelined gateway client', () => {
  const prefix = `test-bull-${randomUUID()}`;
  const shared = createRedisClient(REDIS_URL, {
    lazyConnect: true,
    enableAutoPipelining: true,
    autoPipeliningIgnoredCommands: ['evalsha', 'eval', 'ping'],
    ...failFastRedisOptions(1_000),
  });
  const bull = new BullQueues({ BULLMQ_PREFIX: prefix } as GatewayConfig, shared);

  after(async () => {
    await bull.onModuleDestroy();
    const keys = await shared.keys(`${prefix}:*`);
    if (keys.length) await shared.del(...keys);
    shared.disconnect();
  });

  it('adds jobs while the shared client keeps auto-pipelines waiting; nothing is thrown', async () => {
    await shared.connect();
    const crashes: unknown[] = [];
    const onUncaught = (e: unknown) => crashes.push(e);
    process.on('uncaughtException', onUncaught);
    let traffic = true;
    // Gateway-like traffic: a GET on every turn of the event loop, so that behind the pipeline in flight
    // another one is always waiting for its tick.
    const tick = () => {
      if (!traffic) return;
      shared.get(`${prefix}:probe`).catch(() => undefined);
      setImmediate(tick);
    };
    tick();
    try {
      const queue = await bull.get('jobs');
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) => queue.add('work', { i }).then((j) => j.id)),
      );
      assert.equal(new Set(ids).size, 20);
      assert.equal(await queue.count(), 20);
    } finally {
      traffic = false;
      await shared.get(`${prefix}:probe`);
      process.off('uncaughtException', onUncaught);
    }
    assert.deepEqual(crashes, []);
  });
});
