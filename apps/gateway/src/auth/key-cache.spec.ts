import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AuthedKey, hashKey, KeyCache, type KeyStore } from './key-cache.js';

const alice: AuthedKey = {
  keyId: 'k1',
  memberId: 'm1',
  tier: 'inference',
  billingAnchor: new Date(0),
  overrides: null,
};

class FakeStore implements KeyStore {
  calls = 0;
  revoked = false;
  async findActiveByHash(hash: string) {
    this.calls++;
    return hash === hashKey('sk-good') && !this.revoked ? alice : null;
  }
}

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

  it('stays bounded', async () => {
    const store = new FakeStore();
    const cache = new KeyCache(store, 5000, Date.now, 2);
    await cache.lookup('a');
    await cache.lookup('b');
    await cache.lookup('c');
    await cache.lookup('a');
    assert.equal(store.calls, 4, 'the oldest entry was evicted');
  });
});
