import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '@infer/contracts';
import { InvalidInputError } from './errors.js';
import { createRepositories, type Repositories } from './repositories.js';
import { createTestDatabase, type TestDatabase } from './testing.js';
import { usagePartitionName } from './usage-partitions.js';

function event(requestId: string, at: Date, over: Partial<UsageEvent> = {}): UsageEvent {
  return {
    requestId,
    memberId: 'm1',
    keyId: 'k1',
    model: 'chat-A',
    endpoint: '/v1/chat/completions',
    promptTokens: 10,
    completionTokens: 5,
    totalTokens: 15,
    status: 200,
    latencyMs: 120,
    at: at.getTime(),
    ...over,
  };
}

describe('UsageRepository (PostgreSQL, partitioned ledger)', () => {
  let db: TestDatabase;
  let repos: Repositories;
  const march = new Date('2026-03-10T12:00:00Z');

  before(async () => {
    db = await createTestDatabase();
    repos = createRepositories(db.url);
  });

  after(async () => {
    await repos?.close();
    await db?.drop();
  });

  async function partitionOf(requestId: string): Promise<string | undefined> {
    const rows = await repos.db.$queryRawUnsafe<{ part: string }[]>(
      `SELECT tableoid::regclass::text AS part FROM "UsageEvent" WHERE "requestId" = $1`,
      requestId,
    );
    return rows[0]?.part.replaceAll('"', '');
  }

  it('insertBatch is idempotent by requestId and reports how many were new', async () => {
    const a = event('req-a', march);
    const b = event('req-b', march, {
      model: 'chat-B',
      totalTokens: 100,
      promptTokens: 60,
      completionTokens: 40,
    });
    assert.deepEqual(await repos.usage.insertBatch([a, b, a]), { inserted: 2, duplicates: 1 });
    assert.deepEqual(await repos.usage.insertBatch([a]), { inserted: 0, duplicates: 1 });
    // The same request re-published with another timestamp is still one row.
    assert.deepEqual(await repos.usage.insertBatch([{ ...a, at: a.at + 5_000 }]), {
      inserted: 0,
      duplicates: 1,
    });
    assert.deepEqual(await repos.usage.insertBatch([]), { inserted: 0, duplicates: 0 });
    const rows = await repos.db.usageEvent.findMany({ where: { requestId: 'req-a' } });
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.createdAt.getTime(), march.getTime());
  });

  it('rows land in their month partition, created on demand', async () => {
    const future = new Date('2031-07-04T00:00:00Z');
    await repos.usage.insertBatch([event('req-future', future)]);
    assert.equal(await partitionOf('req-future'), usagePartitionName(future));
    assert.equal(usagePartitionName(future), 'UsageEvent_2031_07');
    assert.equal(await partitionOf('req-a'), 'UsageEvent_2026_03');
  });

  it('rows that reached the default partition move when their month partition is created', async () => {
    const at = new Date('2032-02-29T23:59:59.999Z');
    await repos.db.$executeRawUnsafe(
      `INSERT INTO "UsageEvent" ("requestId","memberId","keyId","model","endpoint","promptTokens","completionTokens",
        "totalTokens","status","latencyMs","createdAt") VALUES ('req-stray','m1','k1','chat-A','/v1/x',1,1,2,200,1,$1::timestamptz)`,
      at.toISOString(),
    );
    assert.equal(await partitionOf('req-stray'), 'UsageEvent_default');
    await repos.usage.ensurePartitions([at]);
    assert.equal(await partitionOf('req-stray'), 'UsageEvent_2032_02');
    assert.deepEqual(await repos.usage.insertBatch([event('req-stray', at)]), { inserted: 0, duplicates: 1 });
  });

  it('summary totals per member / key / model over [from, to)', async () => {
    const base = new Date('2026-04-01T00:00:00Z');
    await repos.usage.insertBatch([
      event('s1', new Date('2026-04-01T00:00:00Z'), { memberId: 'mx', keyId: 'kx1' }),
      event('s2', new Date('2026-04-15T00:00:00Z'), {
        memberId: 'mx',
        keyId: 'kx2',
        model: 'chat-E',
        totalTokens: 7,
        promptTokens: 3,
        completionTokens: 4,
      }),
      event('s3', new Date('2026-04-30T23:59:59Z'), { memberId: 'mx', keyId: 'kx1' }),
      event('s4', new Date('2026-05-01T00:00:00Z'), { memberId: 'mx', keyId: 'kx1' }), // outside [from, to)
      event('s5', new Date('2026-04-10T00:00:00Z'), { memberId: 'my', keyId: 'ky' }),
    ]);
    const to = new Date('2026-05-01T00:00:00Z');
    const member = await repos.usage.summary({ memberId: 'mx', from: base, to });
    assert.equal(member.requests, 3);
    assert.equal(member.totalTokens, 15 + 7 + 15);
    assert.equal(member.promptTokens, 10 + 3 + 10);
    assert.equal(member.completionTokens, 5 + 4 + 5);
    assert.deepEqual(
      member.byModel.map((m) => [m.model, m.requests, m.totalTokens]),
      [
        ['chat-A', 2, 30],
        ['chat-E', 1, 7],
      ],
    );
    const key = await repos.usage.summary({ keyId: 'kx1', from: base, to });
    assert.equal(key.requests, 2);
    const model = await repos.usage.summary({ memberId: 'mx', model: 'chat-E', from: base, to });
    assert.deepEqual([model.requests, model.totalTokens], [1, 7]);
    const everyone = await repos.usage.summary({ from: base, to });
    assert.equal(everyone.requests, 4);
    const empty = await repos.usage.summary({ memberId: 'nobody', from: base, to });
    assert.deepEqual([empty.requests, empty.totalTokens, empty.byModel], [0, 0, []]);
  });

  it('rejects malformed events and bad periods', async () => {
    await assert.rejects(
      repos.usage.insertBatch([{ ...event('bad', march), totalTokens: -1 }]),
      InvalidInputError,
    );
    await assert.rejects(repos.usage.summary({ from: new Date('x'), to: new Date() }), InvalidInputError);
  });
});
