import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { type AuthedKey, hashKey, KeyCache, type KeyStore } from './key-cache.js';

const alice: AuthedKey = {
  keyId: 'k1',
  memberId: 'm1',
  tier: 'inference',
  billingAnchor: new Date(0),
  overrides: null,
  notAfter: Number.POSITIVE_INFINITY,
  expiresAt: Number.POSITIVE_INFINITY,
  models: null,
  ipAllowed: null,
};

class FakeStore implements KeyStore {
  calls = 0;
  revoked = false;
  down = false;
  async findActiveByHash(hash: string) {
    this.calls++;
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    return hash === hashKey('sk-good') && !this.revoked ? alice : null;
  }
}

const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e: unknown) => (e instanceof ApiError ? e.status : 500),
  );

describe('KeyCache', () => {
  it('stores keys by SHA-256 only', () => {
    assert.match(hashKey('sk-good'), /^[0-9a-f]{64}$/);
  });

  it('answers repeated lookups from memory within the TTL, then asks the store again', async () => {
    let t = 0;
    const store = new FakeStore();
    const cache = new KeyCache(store, 5000, () => t);
    assert.deepEqual(await cache.lookup('sk-good'), alice);
    assert.deepEqual(await cache.lookup('sk-good'), alice);
    assert.equal(store.calls, 1);
    store.revoked = true;
    t = 4999;
    assert.deepEqual(await cache.lookup('sk-good'), alice, 'still cached just before the TTL');
    t = 5001;
    assert.equal(await cache.lookup('sk-good'), null, 'a revoked key stops working once the TTL passes');
  });

  it('caches misses too, and shares one query among concurrent lookups', async () => {
    const store = new FakeStore();
    const cache = new KeyCache(store, 5000);
    const r = await Promise.all([cache.lookup('sk-bad'), cache.lookup('sk-bad'), cache.lookup('sk-bad')]);
    assert.deepEqual(r, [null, null, null]);
    await cache.lookup('sk-bad');
    assert.equal(store.calls, 1);
  });

  it('after clear(), a lookup that was already under way does not store its (older) answer', async () => {
    let release: (() => void) | undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const store = new FakeStore();
    const slow: KeyStore = {
      findActiveByHash: async (hash) => {
        const value = await store.findActiveByHash(hash); // read before the revocation
        if (store.calls === 1) await gate;
        return value;
      },
    };
    const cache = new KeyCache(slow, 60_000);
    const first = cache.lookup('sk-good');
    while (store.calls === 0) await new Promise((r) => setImmediate(r));
    store.revoked = true;
    cache.clear(); // the revocation is announced while the first lookup is still out
    release?.();
    assert.deepEqual(await first, alice, 'the lookup under way answers what it read');
    assert.equal(
      await cache.lookup('sk-good'),
      null,
      'the next lookup asks the store and sees the revocation',
    );
    assert.equal(store.calls, 2);
  });

  it('stays bounded', async () => {
    const store = new FakeStore();
    const cache = new KeyCache(store, 5000, Date.now, 2);
    await cache.lookup('a');
    await cache.lookup('b');
    await cache.lookup('c');
    await cache.lookup('a');
    assert.equal(store.calls, 4, 'the oldest entry was evicted');
  });

  it('store down: a key confirmed within the stale window keeps working; past it, or never seen, 503 (never 500)', async () => {
    let t = 0;
    const store = new FakeStore();
    const cache = new KeyCache(store, 5000, () => t, { staleMs: 60_000 });
    assert.deepEqual(await cache.lookup('sk-good'), alice);
    store.down = true;
    t = 30_000;
    assert.deepEqual(await cache.lookup('sk-good'), alice, 'stale-while-error');
    assert.equal(await statusOf(cache.lookup('sk-new')), 503, 'an unknown key cannot be verified');
    t = 61_000;
    assert.equal(await statusOf(cache.lookup('sk-good')), 503, 'past the stale window');
    store.down = false;
    assert.deepEqual(await cache.lookup('sk-good'), alice, 'back to normal once the store answers');
  });

  it('an invalid-key flood from one address is cut off with 429 without querying the store; others are not', async () => {
    let t = 0;
    const store = new FakeStore();
    const cache = new KeyCache(store, 5000, () => t, { missesPerWindow: 5, missWindowMs: 10_000 });
    assert.deepEqual(await cache.lookup('sk-good', '203.0.113.9'), alice);
    for (let i = 0; i < 5; i++) assert.equal(await cache.lookup(`sk-bad-${i}`, '203.0.113.9'), null);
    const before = store.calls;
    const err = await cache.lookup('sk-bad-next', '203.0.113.9').catch((e: unknown) => e);
    assert.ok(err instanceof ApiError && err.status === 429);
    assert.equal(err.headers['retry-after'], '10');
    assert.equal(store.calls, before, 'no query for the refused lookup');
    assert.deepEqual(await cache.lookup('sk-good', '203.0.113.9'), alice, 'a cached valid key still works');
    assert.equal(await cache.lookup('sk-bad-other', '198.51.100.1'), null, 'another address is not affected');
    t = 10_001;
    assert.equal(await cache.lookup('sk-bad-later', '203.0.113.9'), null, 'the window passes');
  });

  it('a known-good key is never throttled by the invalid-key flood of its address, also after an admin change or its TTL', async () => {
    let t = 0;
    const store = new FakeStore();
    const cache = new KeyCache(store, 5000, () => t, { missesPerWindow: 5, missWindowMs: 10_000 });
    assert.deepEqual(await cache.lookup('sk-good', '203.0.113.9'), alice);
    for (let i = 0; i < 5; i++) assert.equal(await cache.lookup(`sk-bad-${i}`, '203.0.113.9'), null);
    assert.equal(await statusOf(cache.lookup('sk-bad-next', '203.0.113.9')), 429, 'the flood is cut off');
    cache.clear();
    assert.deepEqual(await cache.lookup('sk-good', '203.0.113.9'), alice, 'after every entry was dropped');
    t = 6000;
    assert.deepEqual(await cache.lookup('sk-good', '203.0.113.9'), alice, 'after its TTL');
    assert.equal(await statusOf(cache.lookup('sk-bad-again', '203.0.113.9')), 429, 'bad keys still are');
    store.revoked = true;
    t = 12_000;
    for (let i = 0; i < 5; i++) await cache.lookup(`sk-bad2-${i}`, '203.0.113.9');
    assert.equal(
      await cache.lookup('sk-good', '203.0.113.9'),
      null,
      'a revoked key is asked for, and refused',
    );
  });

  it('invalidate(keys, members) drops only those lookups (and cached misses): other keys survive a store outage', async () => {
    const bob: AuthedKey = { ...alice, keyId: 'k2', memberId: 'm2' };
    const carol: AuthedKey = { ...alice, keyId: 'k3', memberId: 'm3' };
    const byHash = new Map([
      [hashKey('sk-alice'), alice],
      [hashKey('sk-bob'), bob],
      [hashKey('sk-carol'), carol],
    ]);
    let down = false;
    let calls = 0;
    const store: KeyStore = {
      async findActiveByHash(hash) {
        calls++;
        if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
        return byHash.get(hash) ?? null;
      },
    };
    const cache = new KeyCache(store, 60_000);
    for (const k of ['sk-alice', 'sk-bob', 'sk-carol', 'sk-unknown']) await cache.lookup(k);
    assert.equal(calls, 4);
    cache.invalidate(['k2'], ['m3']);
    down = true;
    assert.deepEqual(await cache.lookup('sk-alice'), alice, 'untouched: served from the cache, no query');
    assert.equal(calls, 4);
    assert.equal(await statusOf(cache.lookup('sk-bob')), 503, 'touched key: must be asked again');
    assert.equal(await statusOf(cache.lookup('sk-carol')), 503, "touched member's key: must be asked again");
    assert.equal(await statusOf(cache.lookup('sk-unknown')), 503, 'a cached miss is dropped too');
    assert.equal(calls, 7);
  });
});
