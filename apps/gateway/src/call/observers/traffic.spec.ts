import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import {
  bucketOf,
  LATENCY_BOUNDS_MS,
  percentileOf,
  readTraffic,
  summarize,
  TrafficRecorder,
} from './traffic.js';

describe('overview traffic: latency buckets and percentiles', () => {
  it('puts a latency in the first bucket whose bound is not below it', () => {
    assert.equal(bucketOf(0), 0);
    assert.equal(bucketOf(5), 0);
    assert.equal(bucketOf(5.1), 1);
    assert.equal(bucketOf(120_000), LATENCY_BOUNDS_MS.length - 1);
    assert.equal(bucketOf(1e9), LATENCY_BOUNDS_MS.length);
  });

  it('reads nearest-rank percentiles from bucket counts', () => {
    const b = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
    assert.equal(percentileOf(b, 50), null);
    b[bucketOf(20)] = 98; // 98 requests at <= 25 ms
    b[bucketOf(900)] = 1; // one at <= 1000 ms
    b[bucketOf(1e9)] = 1; // one above the last bound
    assert.equal(percentileOf(b, 50), 25);
    assert.equal(percentileOf(b, 98), 25);
    assert.equal(percentileOf(b, 99), 1000);
    assert.equal(percentileOf(b, 100), 120_000);
  });

  it('adds the hashes of several replicas into per-model series', () => {
    const minute0 = { 'chat-A\treq': '3', 'chat-A\terr': '1', 'chat-A\ttok': '30', 'chat-A\tb2': '3' };
    const minute2 = {
      'chat-A\treq': '1',
      'chat-A\tb10': '1',
      'embed\treq': '5',
      'embed\tb0': '5',
      junk: '1',
    };
    const [a, e] = summarize([minute0, {}, minute2]);
    assert.equal(a?.model, 'embed');
    assert.deepEqual(a?.requests_per_min, [0, 0, 5]);
    assert.equal(e?.model, 'chat-A');
    assert.equal(e?.requests, 4);
    assert.equal(e?.errors, 1);
    assert.deepEqual(e?.tokens_per_min, [30, 0, 0]);
    assert.equal(e?.p50_ms, 25);
    assert.equal(e?.p99_ms, 1000);
    assert.deepEqual(e?.p50_per_min, [25, null, 1000]);
  });
});

describe('overview traffic in Redis (two recorders = two gateway replicas)', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = `test:ov:${randomBytes(4).toString('hex')}:`;
  before(async () => {
    await redis.ping();
  });
  after(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('writes batched counts that any replica reads back, with a TTL', async () => {
    const a = new TrafficRecorder(redis, prefix, 60_000);
    const b = new TrafficRecorder(redis, prefix, 60_000);
    const now = Date.UTC(2026, 0, 1, 12, 30, 10);
    for (let i = 0; i < 99; i++) a.record('chat-A', 200, 20, 10, now);
    b.record('chat-A', 500, 3000, 0, now);
    b.record('chat-C', 429, 1, 0, now);
    b.record('chat-C', 402, 1, 0, now);
    b.record('chat-C', 400, 1, 0, now);
    b.record('chat-C', 503, 1, 0, now);
    b.record('chat-B', 200, 40, 7, now - 60_000);
    await Promise.all([a.flush(), b.flush()]);
    // Nothing left to write: a second flush sends nothing.
    await a.flush();
    const { minuteStarts, models } = await readTraffic(redis, prefix, 5, now);
    assert.equal(minuteStarts.length, 5);
    assert.equal(minuteStarts.at(-1), Math.floor(now / 60_000) * 60);
    const chatA = models.find((m) => m.model === 'chat-A');
    assert.equal(chatA?.requests, 100);
    assert.equal(chatA?.errors, 1);
    assert.equal(chatA?.tokens, 990);
    assert.equal(chatA?.p50_ms, 25);
    assert.equal(chatA?.p99_ms, 25);
    assert.deepEqual(chatA?.requests_per_min, [0, 0, 0, 0, 100]);
    assert.deepEqual(chatA?.server_errors_per_min, [0, 0, 0, 0, 1]);
    assert.deepEqual(chatA?.refusals_per_min, [0, 0, 0, 0, 0]);
    // Errors split: refusals (429, 402) and server errors (5xx) apart; the rest are client errors.
    const chatC = models.find((m) => m.model === 'chat-C');
    assert.equal(chatC?.errors, 4);
    assert.deepEqual(chatC?.refusals_per_min, [0, 0, 0, 0, 2]);
    assert.deepEqual(chatC?.server_errors_per_min, [0, 0, 0, 0, 1]);
    const chatB = models.find((m) => m.model === 'chat-B');
    assert.deepEqual(chatB?.tokens_per_min, [0, 0, 0, 7, 0]);
    const ttl = await redis.ttl(`${prefix}ov:${Math.floor(now / 60_000)}`);
    assert.ok(ttl > 3000 && ttl <= 3 * 3600, `ttl ${ttl}`);
    await a.stop();
    await b.stop();
  });
});
