// The gateway's queries on pg directly (queries.ts, listEnabledModels, usageTotal) give what Prisma's
// client gives for the same rows: the ORM's own query where there was one (the catalog: enum arrays,
// bigint, Json), and the same statement run through Prisma (`prismaRunner`, what the repositories do).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '@infer/contracts';
import type pg from 'pg';
import { hashApiKey } from './api-keys.js';
import { listEnabledModels, rowToEntry } from './catalog.js';
import { createPgPool } from './pg-pool.js';
import { findActiveKeyByHash, prismaRunner, touchKeyLastUsed } from './queries.js';
import { createRepositories, type Repositories } from './repositories.js';
import { createTestDatabase, type TestDatabase } from './testing.js';
import { usageTotal } from './usage-report.js';

describe('queries on pg directly (the gateway) and through Prisma', () => {
  let db: TestDatabase;
  let repos: Repositories;
  let pool: pg.Pool;

  before(async () => {
    db = await createTestDatabase();
    repos = createRepositories(db.url);
    pool = createPgPool(db.url);
    await repos.catalog.syncFromFile('config/models.yaml');
  });

  after(async () => {
    await pool?.end();
    await repos?.close();
    await db?.drop();
  });

  it('listEnabledModels: the same entries as the ORM query, enum arrays, bigint and Json included', async () => {
    // Disable one model: it must not be listed.
    await repos.db.model.update({ where: { id: 'chat-B' }, data: { enabled: false } });
    const orm = (
      await repos.db.model.findMany({ where: { enabled: true }, orderBy: [{ rank: 'asc' }, { id: 'asc' }] })
    ).map(rowToEntry);
    const onPg = await listEnabledModels(pool);
    assert.deepEqual(onPg, orm);
    assert.deepEqual(await repos.catalog.listEnabled(), orm);
    assert.equal(onPg.length, 11);
    assert.ok(!onPg.some((m) => m.id === 'chat-B'));
    // What the mapping must get right: tiers (an enum array: text from pg unless cast), an allowance
    // over 2^31 (bigint: a string from pg), the engine and capabilities (Json).
    const chatG = onPg.find((m) => m.id === 'chat-G');
    assert.ok(chatG);
    assert.ok(Array.isArray(chatG.tiers) && chatG.tiers.length > 0);
    assert.deepEqual(chatG.allowance, { tokens: 3_000_000_000, period: 'billing_period' });
    assert.equal(typeof chatG.engine, 'object');
    assert.ok(onPg.some((m) => m.tiers.length > 1));
    await repos.db.model.update({ where: { id: 'chat-B' }, data: { enabled: true } });
  });

  it('findActiveKeyByHash: key, member, tier and overrides as through Prisma; revoked and suspended refused', async () => {
    const member = await repos.members.create({ name: 'q', tier: 'premium' });
    const { key, record } = await repos.keys.mint(member.id, 'k');
    await repos.keys.setLimits(record.id, {
      key: { requests_per_minute: 7 },
      models: { 'chat-A': { tokens_per_minute: 9 } },
    });
    const hash = hashApiKey(key);
    const onPg = await findActiveKeyByHash(pool, hash);
    assert.deepEqual(onPg, await repos.keys.findActiveByHash(hash));
    assert.deepEqual(onPg, {
      keyId: record.id,
      memberId: member.id,
      tier: 'premium',
      name: 'k',
      prefix: record.prefix,
      revoked: false,
      limits: { key: { requests_per_minute: 7 }, models: { 'chat-A': { tokens_per_minute: 9 } } },
      memberLimits: null,
      billingPeriodAnchor: member.billingPeriodAnchor,
      lastUsedAt: null,
      expiresAt: null,
      allowedModels: [],
      allowedIps: [],
      graceUntil: null,
      logBodies: false,
    });
    assert.equal(await findActiveKeyByHash(pool, hashApiKey(`${key}x`)), null);
    // The member's body-logging switch comes with the key, on both drivers.
    await repos.members.update(member.id, { logBodies: true });
    assert.equal((await findActiveKeyByHash(pool, hash))?.logBodies, true);
    assert.equal((await repos.keys.findActiveByHash(hash))?.logBodies, true);
    await repos.members.update(member.id, { logBodies: false });

    // Rotated with a grace: the new and the old secret find the same key (the old with its grace end),
    // on both drivers; after the grace the old one finds nothing.
    await repos.keys.updateLifecycle(record.id, { allowedModels: ['chat-A'], allowedIps: ['10.0.0.0/8'] });
    const at = new Date();
    const rotated = await repos.keys.rotate(record.id, 60_000, at);
    assert.equal(rotated.record.id, record.id);
    const byOld = await findActiveKeyByHash(pool, hash);
    assert.deepEqual(byOld, await repos.keys.findActiveByHash(hash));
    assert.equal(byOld?.keyId, record.id);
    assert.equal(byOld?.graceUntil?.getTime(), at.getTime() + 60_000);
    assert.deepEqual(byOld?.allowedModels, ['chat-A']);
    assert.deepEqual(byOld?.allowedIps, ['10.0.0.0/8']);
    const byNew = await findActiveKeyByHash(pool, hashApiKey(rotated.key));
    assert.equal(byNew?.keyId, record.id);
    assert.equal(byNew?.graceUntil, null);
    assert.equal(await findActiveKeyByHash(pool, hash, { now: new Date(at.getTime() + 60_000) }), null);

    const hashNow = hashApiKey(rotated.key);
    await repos.db.member.update({ where: { id: member.id }, data: { suspendedAt: new Date() } });
    assert.equal(await findActiveKeyByHash(pool, hashNow), null);
    assert.equal((await findActiveKeyByHash(pool, hashNow, { includeRevoked: true }))?.keyId, record.id);
    await repos.db.member.update({ where: { id: member.id }, data: { suspendedAt: null } });
    await repos.keys.revoke(record.id);
    assert.equal(await findActiveKeyByHash(pool, hashNow), null);
    const revoked = await findActiveKeyByHash(pool, hashNow, { includeRevoked: true });
    assert.equal(revoked?.revoked, true);
    assert.deepEqual(revoked, await repos.keys.findActiveByHash(hashNow, { includeRevoked: true }));
  });

  it('touchKeyLastUsed writes at most once per interval, on pg as through Prisma', async () => {
    const member = await repos.members.create({ name: 't', tier: 'community' });
    const { record } = await repos.keys.mint(member.id);
    const t0 = new Date('2026-05-01T10:00:00.000Z');
    assert.equal(await touchKeyLastUsed(pool, record.id, t0), true);
    assert.equal(await touchKeyLastUsed(pool, record.id, new Date(t0.getTime() + 10_000)), false);
    assert.equal(await repos.keys.touchLastUsed(record.id, new Date(t0.getTime() + 20_000)), false);
    assert.equal(await touchKeyLastUsed(pool, record.id, new Date(t0.getTime() + 61_000)), true);
    const row = await repos.db.apiKey.findUnique({ where: { id: record.id } });
    assert.equal(row?.lastUsedAt?.toISOString(), '2026-05-01T10:01:01.000Z');
    assert.equal(await touchKeyLastUsed(pool, 'no-such-key'), false);
  });

  it('usageTotal: the same totals on pg and through Prisma, every filter', async () => {
    const at = new Date('2026-04-10T12:00:00Z').getTime();
    const e = (requestId: string, over: Partial<UsageEvent>): UsageEvent => ({
      requestId,
      memberId: 'm1',
      keyId: 'k1',
      model: 'chat-A',
      endpoint: '/v1/chat/completions',
      promptTokens: 1,
      completionTokens: 1,
      totalTokens: 2,
      status: 200,
      latencyMs: 5,
      at,
      ...over,
    });
    await repos.usage.insertBatch([
      e('u1', { totalTokens: 100 }),
      e('u2', { totalTokens: 40, endpoint: '/v1/embeddings', model: 'embed-A' }),
      e('u3', { totalTokens: 7, keyId: 'k2' }),
      e('u4', { totalTokens: 1_000, memberId: 'm2' }),
      e('u5', { totalTokens: 3, endpoint: '/v1/images/generations', at: at + 86_400_000 * 30 }),
    ]);
    const from = new Date('2026-04-01T00:00:00Z');
    const to = new Date('2026-05-01T00:00:00Z');
    const cases = [
      [{ unit: 'tokens', from, to }, 1_147],
      [{ unit: 'requests', from, to }, 4],
      [{ unit: 'tokens', memberId: 'm1', from, to }, 147],
      [{ unit: 'tokens', memberId: 'm1', keyId: 'k1', from, to }, 140],
      [{ unit: 'tokens', model: 'chat-A', from, to }, 1_107],
      [{ unit: 'requests', endpoints: ['/v1/embeddings', '/v1/x'], from, to }, 1],
      [{ unit: 'tokens', endpointPrefix: '/v1/chat/', memberId: 'm1', from, to }, 107],
      [{ unit: 'tokens', endpointPrefix: '/v1/images/', from, to: new Date('2026-06-01T00:00:00Z') }, 3],
      [{ unit: 'requests', memberId: 'nobody', from, to }, 0],
    ] as const;
    for (const [q, expected] of cases) {
      assert.equal(await usageTotal(pool, q), expected, JSON.stringify(q));
      assert.equal(await usageTotal(prismaRunner(repos.db), q), expected, JSON.stringify(q));
    }
  });
});
