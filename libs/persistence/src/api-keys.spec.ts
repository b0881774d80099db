import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateApiKey, hashApiKey, isApiKeyFormat } from './api-keys.js';
import { InvalidInputError, NotFoundError } from './errors.js';
import { createRepositories, type Repositories } from './repositories.js';
import { createTestDatabase, type TestDatabase } from './testing.js';

describe('generateApiKey / hashApiKey', () => {
  it('makes sk-inf- + 40 base62 chars, a 13-char display prefix and the sha256 hex', () => {
    const { key, prefix, hash } = generateApiKey();
    assert.match(key, /^sk-inf-[0-9A-Za-z]{40}$/);
    assert.equal(prefix, key.slice(0, 13));
    assert.match(prefix, /^sk-inf-[0-9A-Za-z]{6}$/);
    assert.equal(hash, hashApiKey(key));
    assert.match(hash, /^[0-9a-f]{64}$/);
    assert.ok(isApiKeyFormat(key));
    assert.ok(!isApiKeyFormat(`${key}x`));
  });

  it('hashes like sha256 and never repeats keys', () => {
    assert.equal(hashApiKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const keys = new Set(Array.from({ length: 2000 }, () => generateApiKey().key));
    assert.equal(keys.size, 2000);
  });

  it('uses the whole base62 alphabet', () => {
    const chars = new Set(
      Array.from({ length: 300 }, () => generateApiKey().key.slice(7))
        .join('')
        .split(''),
    );
    assert.equal(chars.size, 62);
  });
});

describe('members and API keys (PostgreSQL)', () => {
  let db: TestDatabase;
  let repos: Repositories;

  before(async () => {
    db = await createTestDatabase();
    repos = createRepositories(db.url);
  });

  after(async () => {
    await repos?.close();
    await db?.drop();
  });

  it('creates, reads, lists members and changes their tier', async () => {
    const a = await repos.members.create({ name: 'Ada', email: 'ada@example.org', tier: 'community' });
    assert.equal(a.tier, 'community');
    assert.ok(a.billingPeriodAnchor instanceof Date);
    const b = await repos.members.create({
      name: 'Bob',
      tier: 'premium',
      billingPeriodAnchor: new Date('2026-01-15T00:00:00Z'),
    });
    assert.equal(b.billingPeriodAnchor.toISOString(), '2026-01-15T00:00:00.000Z');
    assert.equal(b.email, null);
    assert.equal((await repos.members.get(a.id))?.name, 'Ada');
    assert.equal(await repos.members.get('nope'), null);
    const updated = await repos.members.setTier(a.id, 'inference');
    assert.equal(updated.tier, 'inference');
    const premium = await repos.members.list({ tier: 'premium' });
    assert.deepEqual(
      premium.map((m) => m.id),
      [b.id],
    );
    assert.ok((await repos.members.list()).length >= 2);
  });

  it('rejects unknown tiers, unknown members, duplicate emails with user errors', async () => {
    await assert.rejects(repos.members.create({ name: 'X', tier: 'gold' }), InvalidInputError);
    await assert.rejects(repos.members.create({ name: ' ', tier: 'premium' }), InvalidInputError);
    await assert.rejects(repos.members.setTier('no-such-member', 'premium'), NotFoundError);
    const first = await repos.members.create({ name: 'Dup', email: 'dup@example.org', tier: 'community' });
    await assert.rejects(
      repos.members.create({ name: 'Dup2', email: 'dup@example.org', tier: 'community' }),
      /already in use/,
    );
    await assert.rejects(repos.members.setTier(first.id, 'platinum'), /unknown tier: platinum/);
  });

  it('mints a key: plaintext once, only the hash stored, prefix kept', async () => {
    const m = await repos.members.create({ name: 'Keyholder', tier: 'premium' });
    const { key, record } = await repos.keys.mint(m.id, 'laptop');
    assert.match(key, /^sk-inf-[0-9A-Za-z]{40}$/);
    assert.equal(record.prefix, key.slice(0, 13));
    assert.equal(record.memberId, m.id);
    assert.equal(record.name, 'laptop');
    assert.equal(record.revokedAt, null);
    assert.ok(!('hash' in record), 'the public record carries no hash');

    const rows = await repos.db.$queryRawUnsafe<Record<string, unknown>[]>(
      'SELECT * FROM "ApiKey" WHERE "id" = $1',
      record.id,
    );
    const row = rows[0]!;
    assert.equal(row.hash, hashApiKey(key));
    assert.equal(row.prefix, record.prefix);
    const stored = JSON.stringify(await repos.db.$queryRawUnsafe('SELECT * FROM "ApiKey"'));
    assert.ok(!stored.includes(key), 'the full key is stored nowhere');
  });

  it('findActiveByHash returns key, member and tier in one query; follows the member tier', async () => {
    const m = await repos.members.create({ name: 'Auth', tier: 'community' });
    const { key, record } = await repos.keys.mint(m.id);
    const found = await repos.keys.findActiveByHash(hashApiKey(key));
    assert.ok(found);
    assert.equal(found.keyId, record.id);
    assert.equal(found.memberId, m.id);
    assert.equal(found.tier, 'community');
    assert.equal(found.revoked, false);
    assert.equal(found.prefix, record.prefix);
    assert.equal(found.limits, null);
    assert.ok(found.billingPeriodAnchor instanceof Date);
    await repos.members.setTier(m.id, 'premium');
    assert.equal((await repos.keys.findActiveByKey(key))?.tier, 'premium');
    assert.equal(await repos.keys.findActiveByHash(hashApiKey(`${key}x`)), null);
  });

  it('mint for an unknown member is a NotFoundError', async () => {
    await assert.rejects(repos.keys.mint('no-such-member'), NotFoundError);
  });

  it('revokes by id or by prefix; a revoked key is no longer found', async () => {
    const m = await repos.members.create({ name: 'Revoker', tier: 'inference' });
    const one = await repos.keys.mint(m.id, 'one');
    const two = await repos.keys.mint(m.id, 'two');
    const r1 = await repos.keys.revoke(one.record.id);
    assert.ok(r1.revokedAt);
    const r2 = await repos.keys.revoke(two.record.prefix);
    assert.equal(r2.id, two.record.id);
    assert.ok(r2.revokedAt);
    assert.equal(await repos.keys.findActiveByKey(one.key), null);
    assert.equal(await repos.keys.findActiveByKey(two.key), null);
    const withRevoked = await repos.keys.findActiveByKey(two.key, { includeRevoked: true });
    assert.equal(withRevoked?.revoked, true);
    // Revoking again keeps the first time.
    const again = await repos.keys.revoke(one.record.prefix);
    assert.equal(again.revokedAt?.getTime(), r1.revokedAt?.getTime());
    await assert.rejects(repos.keys.revoke('sk-inf-zzzzzz'), NotFoundError);
    const listed = await repos.keys.list(m.id);
    assert.deepEqual(
      listed.map((k) => k.name),
      ['one', 'two'],
    );
    assert.ok(listed.every((k) => k.revokedAt));
  });

  it('touchLastUsed writes at most once per interval', async () => {
    const m = await repos.members.create({ name: 'Toucher', tier: 'inference' });
    const { record, key } = await repos.keys.mint(m.id);
    const t0 = new Date('2026-03-01T10:00:00Z');
    assert.equal(await repos.keys.touchLastUsed(record.id, t0), true);
    assert.equal(await repos.keys.touchLastUsed(record.id, new Date(t0.getTime() + 10_000)), false);
    assert.equal(await repos.keys.touchLastUsed(record.id, new Date(t0.getTime() + 61_000)), true);
    assert.equal((await repos.keys.findActiveByKey(key))?.lastUsedAt?.getTime(), t0.getTime() + 61_000);
    assert.equal(await repos.keys.touchLastUsed('no-such-key'), false);
  });

  it('stores per-key limit overrides', async () => {
    const m = await repos.members.create({ name: 'Limited', tier: 'premium' });
    const { record, key } = await repos.keys.mint(m.id, 'batch', { limits: { rpm: 600 } });
    assert.deepEqual(record.limits, { rpm: 600 });
    assert.deepEqual((await repos.keys.findActiveByKey(key))?.limits, { rpm: 600 });
    const cleared = await repos.keys.setLimits(record.prefix, null);
    assert.equal(cleared.limits, null);
  });
});
