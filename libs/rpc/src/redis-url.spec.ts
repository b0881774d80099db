// REDIS_URL: one primary or a Redis Cluster, checked at start-up with a message that says what is wrong.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clusterSafeQueuePrefix, parseRedisUrl, queuePrefixFor, RedisUrlSchema } from './redis.js';

describe('REDIS_URL', () => {
  it('reads one primary and a cluster (nodes, credentials, TLS)', () => {
    assert.deepEqual(parseRedisUrl('redis://127.0.0.1:6379'), {
      kind: 'single',
      url: 'redis://127.0.0.1:6379',
    });
    assert.deepEqual(parseRedisUrl('rediss+cluster://app:s%40cret@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002'), {
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      tls: true,
      username: 'app',
      password: 's@cret',
    });
    assert.deepEqual(parseRedisUrl('redis+cluster://redis-0').kind, 'cluster');
  });

  it('refuses what it cannot use, without echoing a password', () => {
    assert.throws(() => parseRedisUrl('http://x:1'), /scheme "http:" is not supported/);
    assert.throws(() => parseRedisUrl('redis+cluster://a:99999'), /node "a:99999" is not host:port/);
    assert.throws(() => parseRedisUrl('redis+cluster://'), /names no node/);
    assert.throws(
      () => parseRedisUrl('not a url :pw@'),
      (e: Error) => !e.message.includes('pw'),
    );
    const r = RedisUrlSchema.safeParse('redis+cluster://h:0');
    assert.equal(r.success, false);
  });

  it('gives BullMQ a hash-tagged prefix on a cluster only', () => {
    assert.equal(clusterSafeQueuePrefix('infer:bull'), '{infer:bull}');
    assert.equal(clusterSafeQueuePrefix('{bull}'), '{bull}');
    assert.equal(queuePrefixFor('redis://h:1', 'infer:bull'), 'infer:bull');
    assert.equal(queuePrefixFor('redis+cluster://h:1', 'infer:bull'), '{infer:bull}');
  });
});
