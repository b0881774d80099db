import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { waitFor } from '../../../../../test/support/wait-for.js';
import { InteractivePressure, readPressure } from './pressure.js';

describe('interactive pressure (Redis)', () => {
  let redis: Redis;
  const key = `test:lane:${randomBytes(4).toString('hex')}`;
  before(() => {
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  });
  after(async () => {
    await redis.del(key);
    redis.disconnect();
  });

  it('sums the replicas, counts a request that came and went within a window, ignores stale reports', async () => {
    const a = new InteractivePressure(redis, key, 20);
    const b = new InteractivePressure(redis, key, 20);
    a.start();
    b.start();
    a.begin();
    a.begin();
    b.begin();
    await waitFor('both replicas reported', async () => (await readPressure(redis, key)) === 3);
    a.end();
    a.end();
    b.end();
    await waitFor('no pressure', async () => (await readPressure(redis, key)) === 0);
    // A short request between two reports is still seen in the next one.
    b.begin();
    b.end();
    assert.equal(b.count, 0);
    await waitFor('the peak of the window', async () => (await redis.hget(key, b.replica))?.startsWith('1:'));
    await a.stop();
    await b.stop();
    await redis.hset(key, 'dead-replica', `5:${Date.now() - 10_000}`);
    assert.equal(await readPressure(redis, key), 0);
  });
});
