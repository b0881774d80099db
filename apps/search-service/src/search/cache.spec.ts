import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { SearchRequest } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { Redis } from 'ioredis';
import { normalizeQuery, SearchCache } from './cache.js';

const log = createLogger('cache-test', 'silent');
const req = (over: Partial<SearchRequest> = {}): SearchRequest => ({
  query: 'Llamas',
  count: 5,
  fetch_content: false,
  ...over,
});
const results = [{ title: 't', url: 'https://a.example', snippet: 's', source: 'a.example' }];

describe('SearchCache (Redis)', () => {
  let redis: Redis;
  let now = 1_000_000;
  let cache: SearchCache;
  const prefix = `test:cache:${randomUUID()}`;
  before(async () => {
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true });
    await redis.connect();
    cache = new SearchCache(redis, { prefix, ttlMs: 15 * 60_000, clock: () => now }, log);
  });
  after(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('keys identical queries alike and different ones apart', () => {
    assert.equal(normalizeQuery('  Llamas\tof  the ANDES '), 'llamas of the andes');
    const k = cache.key('local', req());
    assert.equal(cache.key('local', req({ query: ' llamas ' })), k);
    assert.notEqual(cache.key('searxng', req()), k);
    assert.notEqual(cache.key('local', req({ count: 6 })), k);
    assert.notEqual(cache.key('local', req({ freshness: 'pd' })), k);
    assert.notEqual(cache.key('local', req({ fetch_content: true })), k);
    assert.ok(k.startsWith(`${prefix}:`));
  });

  it('serves an entry until the TTL has passed by the clock', async () => {
    const k = cache.key('local', req({ query: randomUUID() }));
    assert.equal(await cache.get(k), null);
    await cache.set(k, results);
    assert.deepEqual(await cache.get(k), results);
    now += 15 * 60_000 - 1;
    assert.deepEqual(await cache.get(k), results);
    now += 1;
    assert.equal(await cache.get(k), null);
    const ttl = await redis.pttl(k);
    assert.ok(ttl > 0 && ttl <= 15 * 60_000, 'Redis expires it too');
  });

  it('is off with a TTL of 0 and survives a Redis that is down', async () => {
    const off = new SearchCache(redis, { prefix, ttlMs: 0, clock: () => now }, log);
    const k = off.key('local', req());
    await off.set(k, results);
    assert.equal(await off.get(k), null);
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    const broken = new SearchCache(down, { prefix, ttlMs: 60_000, clock: () => now }, log);
    assert.equal(await broken.get(k), null);
    await broken.set(k, results);
    down.disconnect();
  });
});
