import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { MembersRepository } from './members.js';
import { createPgPool } from './pg-pool.js';
import { createPrisma } from './prisma.js';
import { StoredResponsesRepository } from './stored-responses.js';
import { createTestDatabase, type TestDatabase } from './testing.js';

describe('StoredResponsesRepository (PostgreSQL)', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let repo: StoredResponsesRepository;
  let a: string;
  let b: string;
  const now = new Date('2026-11-29T12:00:00Z');
  const later = new Date('2026-12-29T12:00:00Z');

  before(async () => {
    db = await createTestDatabase();
    const prisma = createPrisma(db.url);
    const members = new MembersRepository(prisma);
    a = (await members.create({ name: 'a', tier: 'inference' })).id;
    b = (await members.create({ name: 'b', tier: 'inference' })).id;
    await prisma.$disconnect();
    pool = createPgPool(db.url);
    repo = new StoredResponsesRepository(pool);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  const save = (id: string, memberId: string, expiresAt: Date) =>
    repo.save({
      id,
      memberId,
      model: 'chat-E',
      expiresAt,
      previousResponseId: null,
      response: { id, object: 'response', output: [] },
      inputItems: [{ id: `msg_${id}`, type: 'message', role: 'user', content: 'hi' }],
      createdAt: now,
    });

  it('keeps a response for its member only, until it expires', async () => {
    await save('resp_1', a, later);
    const r = await repo.find(a, 'resp_1', now);
    assert.equal(r?.response.id, 'resp_1');
    assert.equal(r?.inputItems[0]?.content, 'hi');
    assert.equal(await repo.find(b, 'resp_1', now), null, "another member's id is not found");
    assert.equal(await repo.find(a, 'resp_1', new Date('2027-01-01')), null, 'expired is not found');
    assert.equal(await repo.delete(b, 'resp_1', now), false);
    assert.equal(await repo.count(a, now), 1);
    assert.equal(await repo.delete(a, 'resp_1', now), true);
    assert.equal(await repo.find(a, 'resp_1', now), null);
  });

  it('counts and purges a member, and the retention job deletes only expired rows', async () => {
    await save('resp_a1', a, later);
    await save('resp_a2', a, new Date('2026-11-29T11:00:00Z'));
    await save('resp_b1', b, later);
    assert.equal(await repo.count(a, now), 1, 'the expired one does not count');
    assert.equal(await repo.deleteExpired(now, 10), 1);
    assert.equal(await repo.deleteExpired(now, 10), 0);
    assert.equal(await repo.purgeMember(a), 1);
    assert.equal(await repo.count(a, now), 0);
    assert.equal(await repo.count(b, now), 1);
  });
});
