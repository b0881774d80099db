import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '@infer/contracts';
import { createRepositories, type Repositories } from './repositories.js';
import { createTestDatabase, type TestDatabase } from './testing.js';

const ev = (requestId: string, at: string, over: Partial<UsageEvent> = {}): UsageEvent => ({
  requestId,
  memberId: 'm1',
  keyId: 'k1',
  model: 'chat-A',
  endpoint: '/v1/chat/completions',
  promptTokens: 10,
  completionTokens: 5,
  totalTokens: 15,
  status: 200,
  latencyMs: 100,
  at: Date.parse(at),
  ...over,
});

describe('usage rollups kept with the ledger (UsageDaily, UsageDailyMember, UsageMonthlyMember, UsageHourlyModel)', () => {
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

  const daily = async () =>
    (await repos.db.$queryRawUnsafe(
      `SELECT to_char("day", 'YYYY-MM-DD') AS day, "memberId", "keyId", "model", "requests", "errors",
              "promptTokens"::int AS p, "completionTokens"::int AS c, "totalTokens"::int AS t
         FROM "UsageDaily" ORDER BY 1, 2, 3, 4`,
    )) as unknown[];
  const fromLedger = async () =>
    (await repos.db.$queryRawUnsafe(
      `SELECT to_char(("createdAt" AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, "memberId", "keyId", "model",
              count(*)::int AS requests, (count(*) FILTER (WHERE "status" >= 400))::int AS errors,
              sum("promptTokens")::int AS p, sum("completionTokens")::int AS c, sum("totalTokens")::int AS t
         FROM "UsageEvent" GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    )) as unknown[];

  it('adds exactly the rows the ledger inserted, per UTC day and per hour and model', async () => {
    const first = await repos.usage.insertBatch([
      ev('r1', '2026-05-01T23:30:00Z'),
      ev('r2', '2026-05-01T23:59:59Z', { status: 429, promptTokens: 0, completionTokens: 0, totalTokens: 0 }),
      ev('r3', '2026-05-02T00:00:01Z', { keyId: 'k2', model: 'chat-B', totalTokens: 7 }),
    ]);
    assert.equal(first.inserted, 3);
    // A re-delivered batch and a duplicate inside a new batch change nothing twice.
    const again = await repos.usage.insertBatch([
      ev('r1', '2026-05-01T23:30:00Z'),
      ev('r4', '2026-05-01T23:10:00Z', { memberId: 'm2' }),
    ]);
    assert.deepEqual(again, { inserted: 1, duplicates: 1 });
    assert.deepEqual(await daily(), await fromLedger());
    const perMember = (await repos.db.$queryRawUnsafe(
      `SELECT to_char("day", 'YYYY-MM-DD') AS day, "memberId", "requests", "totalTokens"::int AS t
         FROM "UsageDailyMember" ORDER BY 1, 2`,
    )) as unknown[];
    assert.deepEqual(perMember, [
      { day: '2026-05-01', memberId: 'm1', requests: 2, t: 15 },
      { day: '2026-05-01', memberId: 'm2', requests: 1, t: 15 },
      { day: '2026-05-02', memberId: 'm1', requests: 1, t: 7 },
    ]);
    assert.equal((await daily()).length, 3);
    const hourly = (await repos.db.$queryRawUnsafe(
      `SELECT to_char("hour" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') AS hour, "model", "requests", "errors",
              "totalTokens"::int AS t, "latencyMsSum"::int AS l FROM "UsageHourlyModel" ORDER BY 1, 2`,
    )) as unknown[];
    assert.deepEqual(hourly, [
      { hour: '2026-05-01T23', model: 'chat-A', requests: 3, errors: 1, t: 30, l: 300 },
      { hour: '2026-05-02T00', model: 'chat-B', requests: 1, errors: 0, t: 7, l: 100 },
    ]);
    // UTC months: the last second of May and the first of June fall in different months.
    await repos.usage.insertBatch([ev('r5', '2026-05-31T23:59:59Z'), ev('r6', '2026-06-01T00:00:00Z')]);
    const monthly = (await repos.db.$queryRawUnsafe(
      `SELECT to_char("month", 'YYYY-MM-DD') AS month, "memberId", "requests", "totalTokens"::int AS t
         FROM "UsageMonthlyMember" ORDER BY 1, 2`,
    )) as unknown[];
    assert.deepEqual(monthly, [
      { month: '2026-05-01', memberId: 'm1', requests: 4, t: 37 },
      { month: '2026-05-01', memberId: 'm2', requests: 1, t: 15 },
      { month: '2026-06-01', memberId: 'm1', requests: 1, t: 15 },
    ]);
  });
});
