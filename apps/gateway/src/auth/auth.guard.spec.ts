import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, cidrMatcher } from '@infer/contracts';
import type { FastifyRequest } from 'fastify';
import { authenticate } from './auth.guard.js';
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
  async findActiveByHash(hash: string) {
    this.calls++;
    return hash === hashKey('sk-good') ? alice : null;
  }
}

/** A request whose client address counts how often it is read (only a store lookup needs it). */
function request(authorization?: string, apiKey?: string, ip = '10.0.0.1') {
  const r = { headers: { authorization, 'x-api-key': apiKey }, ipReads: 0 };
  Object.defineProperty(r, 'ip', {
    get() {
      r.ipReads++;
      return ip;
    },
  });
  return r as typeof r & FastifyRequest;
}

const statusOf = async (f: () => unknown) => {
  try {
    await f();
    return 200;
  } catch (e) {
    return e instanceof ApiError ? e.status : 500;
  }
};

describe('authenticate', () => {
  it('asks the store once, then answers from the cache without a promise or the client address', async () => {
    const store = new FakeStore();
    const keys = new KeyCache(store, 60_000);
    const first = request('Bearer sk-good');
    const asked = authenticate(first, keys);
    assert.ok(asked instanceof Promise);
    assert.deepEqual(await asked, alice);
    assert.equal(first.ipReads, 1);
    const again = request('Bearer sk-good');
    assert.deepEqual(authenticate(again, keys), alice);
    assert.equal(again.ipReads, 0);
    assert.equal(store.calls, 1);
  });

  it('refuses a missing, malformed or unknown key with a 401, cached or not', async () => {
    const keys = new KeyCache(new FakeStore(), 60_000);
    assert.equal(await statusOf(() => authenticate(request(), keys)), 401);
    assert.equal(await statusOf(() => authenticate(request('Basic abc'), keys)), 401);
    assert.equal(await statusOf(() => authenticate(request('Bearer sk-bad'), keys)), 401);
    // Now a cached miss: refused synchronously.
    assert.throws(
      () => authenticate(request('Bearer sk-bad'), keys),
      (e: unknown) => (e as ApiError).status === 401,
    );
  });

  it("takes Anthropic's x-api-key header when there is no Authorization header", async () => {
    const keys = new KeyCache(new FakeStore(), 60_000);
    assert.deepEqual(await authenticate(request(undefined, 'sk-good'), keys), alice);
    assert.equal(await statusOf(() => authenticate(request(undefined, 'sk-bad'), keys)), 401);
    assert.equal(await statusOf(() => authenticate(request(undefined, ''), keys)), 401);
    // Authorization wins: a malformed one is refused even with a good x-api-key.
    assert.equal(await statusOf(() => authenticate(request('Basic abc', 'sk-good'), keys)), 401);
  });

  it("applies the key's own rules from the cache: expiry, an old secret's grace end, the IP allow-list", async () => {
    const now = Date.now();
    const variants: Record<string, AuthedKey> = {
      'sk-expired': { ...alice, notAfter: now - 1, expiresAt: now - 1 },
      'sk-old': { ...alice, notAfter: now - 1, expiresAt: Number.POSITIVE_INFINITY },
      'sk-later': { ...alice, notAfter: now + 60_000, expiresAt: now + 60_000 },
      'sk-ips': { ...alice, ipAllowed: cidrMatcher(['192.0.2.0/24', '2001:db8::/32']) },
    };
    const store: KeyStore = {
      findActiveByHash: async (hash) =>
        Object.entries(variants).find(([k]) => hashKey(k) === hash)?.[1] ?? null,
    };
    const keys = new KeyCache(store, 60_000);
    const errorOf = async (f: () => unknown) => {
      try {
        await f();
        return null;
      } catch (e) {
        return e as ApiError;
      }
    };
    const expired = await errorOf(() => authenticate(request('Bearer sk-expired'), keys));
    assert.equal(expired?.status, 401);
    assert.equal(expired?.code, 'key_expired');
    const old = await errorOf(() => authenticate(request('Bearer sk-old'), keys));
    assert.equal(old?.status, 401);
    assert.equal(old?.code, 'invalid_api_key');
    assert.equal(await errorOf(() => authenticate(request('Bearer sk-later'), keys)), null);
    const outside = await errorOf(() =>
      authenticate(request('Bearer sk-ips', undefined, '198.51.100.1'), keys),
    );
    assert.equal(outside?.status, 403);
    assert.equal(outside?.code, 'ip_not_allowed');
    assert.equal(
      await errorOf(() => authenticate(request('Bearer sk-ips', undefined, '192.0.2.9'), keys)),
      null,
    );
    assert.equal(
      await errorOf(() => authenticate(request('Bearer sk-ips', undefined, '2001:db8::9'), keys)),
      null,
    );
    // Cached now: the same answers come synchronously.
    assert.throws(
      () => authenticate(request('Bearer sk-ips', undefined, '::1'), keys),
      (e: unknown) => (e as ApiError).code === 'ip_not_allowed',
    );
  });
});
