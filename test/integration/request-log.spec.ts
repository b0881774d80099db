// The request log end to end: the gateway (openai SDK) -> usage events on the stack's own stream ->
// the ledger writer -> request_log -> the admin API. Successes, refusals by a limit (429) and client
// errors (400, 404) are found by their request id with the right status, code and limit; the member
// filter never returns another member's rows; retention drops old partitions; a duplicate delivery is
// written once; refusals never become usage rows.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { MemberRefusals, RequestLogEntry, RequestLogList, UsageEvent } from '@infer/contracts';
import { RequestLogRepository, requestLogPartitionName } from '@infer/persistence';
import { jetstream } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { waitFor } from '../support/wait-for.js';
import { apiError, type Stack, startStack, startStackLedger } from './harness.js';
import {
  ADMIN_TOKEN,
  newKey,
  TestClock,
  type TestKey,
  writeCatalog,
  writeLimitsFile,
} from './limits-support.js';

const hi = [{ role: 'user' as const, content: 'hi' }];
const DAY = 86_400_000;

describe('request log (gateway -> usage stream -> ledger writer -> /admin/logs)', () => {
  let stack: Stack;
  let ledger: LedgerWriter;
  let redis: Redis;
  let a: TestKey;
  let b: TestKey;
  const prefix = `rlog:${Math.random().toString(36).slice(2)}:`;
  const ids: Record<string, string> = {};
  let otherId = '';

  const admin = async <T>(path: string): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    return { status: res.status, body: (await res.json()) as T };
  };
  const logged = (requestId: string) =>
    waitFor(
      `request ${requestId} in the log`,
      async () => {
        const r = await admin<RequestLogEntry>(`/admin/logs/${encodeURIComponent(requestId)}`);
        return r.status === 200 ? r.body : null;
      },
      { timeoutMs: 20_000, everyMs: 50 },
    );

  before(async () => {
    const catalogFile = writeCatalog({ 'chat-F': { itl_ms: 40, default_output_tokens: 400 } });
    stack = await startStack({
      catalogFile,
      env: {
        LIMITS_ENABLED: '1',
        LIMITS_FILE: writeLimitsFile({ lease_ttl_ms: 2000 }),
        LIMITS_REDIS_PREFIX: prefix,
        ADMIN_TOKEN,
        MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
      },
    });
    // Mid-minute and fixed: the per-minute window does not roll over during the test.
    new TestClock(Date.UTC(2031, 4, 10, 12, 0, 30)).install(stack.gateway);
    ledger = await startStackLedger(stack);
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    a = await newKey(stack, 'inference', { key: { requests_per_minute: 1 } });
    b = await newKey(stack, 'inference');
  });
  after(async () => {
    const keys = await redis?.keys(`${prefix}*`);
    if (keys?.length) await redis.del(...keys);
    redis?.disconnect();
    await ledger?.stop();
    await stack?.close();
  });

  it('a success, a 429 with its limit, a 404 and a 400 are found by request id', async () => {
    const { response } = await a.client.chat.completions
      .create({ model: 'chat-A', messages: hi, max_tokens: 2 })
      .withResponse();
    ids.ok = response.headers.get('x-request-id') ?? '';
    const limited = await apiError(a.client.chat.completions.create({ model: 'chat-A', messages: hi }));
    assert.equal(limited.status, 429);
    ids.limited = limited.requestID ?? '';
    const unknown = await apiError(
      a.client.chat.completions.create({ model: 'no-such-model', messages: hi }),
    );
    assert.ok(unknown instanceof OpenAI.NotFoundError);
    ids.unknown = unknown.requestID ?? '';
    const bad = await apiError(
      a.client.chat.completions.create({ model: 'chat-A', messages: hi, temperature: 9 }),
    );
    assert.equal(bad.status, 400);
    ids.bad = bad.requestID ?? '';
    const other = await b.client.chat.completions
      .create({ model: 'chat-A', messages: hi, max_tokens: 2 })
      .withResponse();
    otherId = other.response.headers.get('x-request-id') ?? '';
    for (const id of Object.values(ids)) assert.ok(id, 'every answer names its request id');

    const ok = await logged(ids.ok as string);
    assert.equal(ok.status, 200);
    assert.equal(ok.member_id, a.memberId);
    assert.equal(ok.key_id, a.keyId);
    assert.equal(ok.model, 'chat-A');
    assert.equal(ok.endpoint, '/v1/chat/completions');
    assert.equal(ok.refused, false);
    assert.ok(ok.total_tokens > 0);
    assert.equal(ok.error_code, null);

    const lim = await logged(ids.limited);
    assert.equal(lim.status, 429);
    assert.equal(lim.error_code, 'rate_limit_exceeded');
    assert.equal(lim.limit, 'key.requests_per_minute');
    assert.equal(lim.refused, true);
    assert.equal(lim.total_tokens, 0);

    const nf = await logged(ids.unknown);
    assert.equal(nf.status, 404);
    assert.equal(nf.error_code, unknown.code);
    assert.equal(nf.limit, null);

    assert.equal((await logged(otherId)).member_id, b.memberId);
    const br = await logged(ids.bad);
    assert.equal(br.status, 400);
    assert.equal(br.error_code, bad.code);

    const missing = await admin<{ error: { code: string; param: string } }>('/admin/logs/req_nope');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.param, 'request_id');
  });

  it('filters: the member filter never returns another member; status class and code; keyset pages', async () => {
    const mine = await admin<RequestLogList>(`/admin/logs?member=${a.memberId}&limit=200`);
    assert.equal(mine.status, 200);
    assert.deepEqual(new Set(mine.body.data.map((r) => r.member_id)), new Set([a.memberId]));
    assert.deepEqual(new Set(mine.body.data.map((r) => r.request_id)), new Set(Object.values(ids)));
    const theirs = await admin<RequestLogList>(`/admin/logs?member=${b.memberId}`);
    assert.equal(theirs.body.data.length, 1);
    assert.equal(theirs.body.data[0]?.member_id, b.memberId);
    const refused = await admin<RequestLogList>(`/admin/logs?member=${a.memberId}&status=429`);
    assert.deepEqual(
      refused.body.data.map((r) => r.request_id),
      [ids.limited],
    );
    const byCode = await admin<RequestLogList>(`/admin/logs?key=${a.keyId}&code=rate_limit_exceeded`);
    assert.deepEqual(
      byCode.body.data.map((r) => r.request_id),
      [ids.limited],
    );
    // Two per page, newest first, every row once.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/admin/logs?member=${a.memberId}&limit=2${cursor ? `&before=${cursor}` : ''}`;
      const page: { status: number; body: RequestLogList } = await admin<RequestLogList>(q);
      seen.push(...page.body.data.map((r) => r.request_id));
      const times = page.body.data.map((r) => r.at);
      assert.deepEqual(
        times,
        [...times].sort((x, y) => y - x),
      );
      cursor = page.body.next_before;
    } while (cursor);
    assert.equal(seen.length, 4);
    assert.equal(new Set(seen).size, 4);
    const invalid = await admin<{ error: { param: string } }>('/admin/logs?status=3xx');
    assert.equal(invalid.status, 400);
  });

  it('why refused: per limit, how often, the last time; refusals are not usage rows', async () => {
    const r = await admin<MemberRefusals>(`/admin/members/${a.memberId}/refusals`);
    assert.equal(r.status, 200);
    assert.equal(r.body.data.length, 1);
    const [one] = r.body.data;
    assert.equal(one?.limit, 'key.requests_per_minute');
    assert.equal(one?.last_hour, 1);
    assert.equal(one?.last_day, 1);
    assert.equal(one?.last_key_id, a.keyId);
    assert.equal((await admin(`/admin/members/nobody/refusals`)).status, 404);
    // The usage ledger has the success only: quotas and usage reports keep their meaning.
    const usage = await stack.prisma.usageEvent.findMany({ where: { memberId: a.memberId } });
    assert.deepEqual(
      usage.map((u) => u.requestId),
      [ids.ok],
    );
  });

  it('the same event delivered twice is one row', async () => {
    const js = jetstream(ledger.nc);
    const subject = `${stack.usageRoot}.chat-A`;
    const ev = (requestId: string): UsageEvent => ({
      requestId,
      memberId: b.memberId,
      keyId: b.keyId,
      model: 'chat-A',
      endpoint: '/v1/chat/completions',
      promptTokens: 1,
      completionTokens: 1,
      totalTokens: 2,
      status: 200,
      latencyMs: 3,
      at: Date.now(),
    });
    const dup = ev(`dup-${randomUUID()}`);
    // Without a message id, so JetStream keeps both: the writer must skip the second.
    await js.publish(subject, JSON.stringify(dup));
    await js.publish(subject, JSON.stringify(dup));
    const sentinel = ev(`sentinel-${randomUUID()}`);
    await js.publish(subject, JSON.stringify(sentinel));
    // Batches are written in order: once the sentinel is in, both copies were handled.
    await logged(sentinel.requestId);
    const rows = await new RequestLogRepository(stack.prisma).byRequestId(dup.requestId);
    assert.equal(rows.length, 1);
  });

  it('retention drops whole partitions older than REQUEST_LOG_RETENTION_DAYS', async () => {
    const repo = new RequestLogRepository(stack.prisma);
    const old = Date.now() - 45 * DAY;
    const oldRow = { ...(await logged(ids.ok as string)) };
    await repo.ensurePartitions([old]);
    // Written directly, as a writer with a longer retention would have.
    await repo.insertBatch(
      [
        {
          requestId: `old-${randomUUID()}`,
          memberId: oldRow.member_id,
          keyId: oldRow.key_id,
          model: 'chat-A',
          endpoint: '/v1/chat/completions',
          promptTokens: 1,
          completionTokens: 1,
          totalTokens: 2,
          status: 200,
          latencyMs: 1,
          at: old,
        },
      ],
      { retentionDays: 365 },
    );
    const partitions = async () =>
      (
        await stack.prisma.$queryRawUnsafe<{ name: string }[]>(
          `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'request_log'::regclass`,
        )
      ).map((r) => r.name);
    assert.ok((await partitions()).includes(requestLogPartitionName(old)));
    const dropped = await ledger.requestLogHousekeeping();
    assert.deepEqual(dropped, [requestLogPartitionName(old)]);
    const left = await partitions();
    assert.ok(!left.includes(requestLogPartitionName(old)));
    // Today and the days ahead are there; today's rows are kept.
    assert.ok(left.includes(requestLogPartitionName(Date.now())));
    assert.ok(left.includes(requestLogPartitionName(Date.now() + 2 * DAY)));
    assert.equal((await logged(ids.ok as string)).status, 200);
  });
});
