import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '@infer/contracts';
import { createRepositories, type Repositories } from './repositories.js';
import { dayStart, RequestLogRepository, requestLogPartitionName } from './request-log.js';
import { createTestDatabase, type TestDatabase } from './testing.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-06-15T10:00:00Z');

function event(requestId: string, at: number, over: Partial<UsageEvent> = {}): UsageEvent {
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
    at,
    ...over,
  };
}

describe('RequestLogRepository (PostgreSQL, daily partitions)', () => {
  let db: TestDatabase;
  let repos: Repositories;
  let log: RequestLogRepository;

  before(async () => {
    db = await createTestDatabase();
    repos = createRepositories(db.url);
    log = new RequestLogRepository(repos.db);
  });
  after(async () => {
    await repos?.close();
    await db?.drop();
  });

  const partitions = async () =>
    (
      await repos.db.$queryRawUnsafe<{ name: string }[]>(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'request_log'::regclass ORDER BY 1`,
      )
    ).map((r) => r.name);

  it('names partitions by UTC day', () => {
    assert.equal(requestLogPartitionName(Date.parse('2026-06-15T23:59:59.999Z')), 'request_log_20260615');
    assert.equal(requestLogPartitionName(Date.parse('2026-06-16T00:00:00Z')), 'request_log_20260616');
    assert.equal(dayStart(Date.parse('2026-06-15T10:00:00Z')).toISOString(), '2026-06-15T00:00:00.000Z');
  });

  it('writes each request once per day: a redelivered batch and a repeat inside a batch are skipped', async () => {
    const a = event('rq-a', NOW);
    const refused = event('rq-b', NOW + 1, {
      status: 429,
      errorCode: 'rate_limit_exceeded',
      limit: 'key.requests_per_minute',
      refused: true,
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
      model: '',
    });
    assert.deepEqual(await log.insertBatch([a, refused, a], { retentionDays: 30, now: NOW }), {
      inserted: 2,
      skipped: 1,
    });
    // The same events again, and the same request re-published later that day.
    assert.deepEqual(
      await log.insertBatch([a, refused, { ...a, at: NOW + 60_000 }], { retentionDays: 30, now: NOW }),
      { inserted: 0, skipped: 3 },
    );
    const [row] = await log.byRequestId('rq-b');
    assert.equal(row?.status, 429);
    assert.equal(row?.errorCode, 'rate_limit_exceeded');
    assert.equal(row?.limitName, 'key.requests_per_minute');
    assert.equal(row?.refused, true);
    assert.equal(row?.model, null);
    assert.equal(row?.cost, null);
    assert.equal((await log.byRequestId('rq-a')).length, 1);
    assert.ok((await partitions()).includes('request_log_20260615'));
  });

  it('filters by member, status class and code, pages newest first by (time, request id)', async () => {
    const t = NOW - 3_600_000;
    await log.insertBatch(
      [
        event('p1', t, { memberId: 'm2' }),
        event('p2', t + 1000, { memberId: 'm2', status: 400, errorCode: 'invalid_value' }),
        event('p3', t + 1000, {
          memberId: 'm2',
          keyId: 'k2',
          status: 429,
          errorCode: 'rate_limit_exceeded',
          limit: 'x',
        }),
        event('p4', t + 2000, { memberId: 'm3' }),
        event('p5', t + 3000, {
          memberId: 'm2',
          status: 502,
          errorCode: 'upstream_error',
          traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        }),
      ],
      { retentionDays: 30, now: NOW },
    );
    const ids = (rows: { requestId: string }[]) => rows.map((r) => r.requestId);
    assert.deepEqual(ids(await log.list({ memberId: 'm2', limit: 10 })), ['p5', 'p3', 'p2', 'p1']);
    const page1 = await log.list({ memberId: 'm2', limit: 2 });
    assert.deepEqual(ids(page1), ['p5', 'p3']);
    const last = page1.at(-1)!;
    assert.deepEqual(
      ids(
        await log.list({ memberId: 'm2', limit: 2, before: { time: last.time, requestId: last.requestId } }),
      ),
      ['p2', 'p1'],
    );
    assert.deepEqual(ids(await log.list({ memberId: 'm2', statusClass: '4xx', limit: 10 })), ['p3', 'p2']);
    assert.deepEqual(ids(await log.list({ memberId: 'm2', statusClass: '429', limit: 10 })), ['p3']);
    assert.deepEqual(ids(await log.list({ memberId: 'm2', statusClass: '5xx', limit: 10 })), ['p5']);
    assert.deepEqual(ids(await log.list({ errorCode: 'invalid_value', limit: 10 })), ['p2']);
    assert.deepEqual(ids(await log.list({ memberId: 'm3', limit: 10 })), ['p4']);
    // From a trace back to its requests.
    assert.deepEqual(ids(await log.list({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', limit: 10 })), ['p5']);
    assert.deepEqual(ids(await log.list({ traceId: '00000000000000000000000000000001', limit: 10 })), []);
    const refusals = await log.refusals('m2', NOW);
    assert.deepEqual(
      refusals.map((r) => [r.limitName, r.errorCode, r.lastHour, r.lastDay, r.lastKeyId]),
      [['x', 'rate_limit_exceeded', 1, 1, 'k2']],
    );
  });

  it('retention drops whole partitions past it, and skips events older than it', async () => {
    const old = NOW - 40 * DAY;
    const edge = NOW - 29 * DAY; // the oldest day kept with 30 days of retention
    // Rows written directly (as an older writer with a longer retention would have).
    await log.ensurePartitions([old, edge]);
    await log.insertBatch([event('old-1', old), event('edge-1', edge)], { retentionDays: 365, now: NOW });
    assert.ok((await partitions()).includes(requestLogPartitionName(old)));
    const dropped = await log.dropExpired(30, NOW);
    assert.deepEqual(dropped, [requestLogPartitionName(old)]);
    assert.ok(!(await partitions()).includes(requestLogPartitionName(old)));
    assert.equal((await log.byRequestId('old-1')).length, 0);
    assert.equal((await log.byRequestId('edge-1')).length, 1);
    // A late event for a dropped day is not written (and does not bring its partition back).
    assert.deepEqual(await log.insertBatch([event('old-2', old)], { retentionDays: 30, now: NOW }), {
      inserted: 0,
      skipped: 1,
    });
    assert.ok(!(await partitions()).includes(requestLogPartitionName(old)));
  });
});
