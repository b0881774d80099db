/**
 * Admin changes are consistent and reach every gateway:
 * - two gateway replicas on one database, NATS and Redis, with key-cache and catalog TTLs far
 *   longer than the test: a key revoked, a member suspended or a model disabled through gateway A is
 *   refused by gateway B within a second (the NATS invalidation, not a TTL);
 * - each admin change and its audit row are one PostgreSQL transaction: a trigger makes the audit
 *   insert fail and the change is not applied (and the other way round: a change that fails leaves
 *   no audit row).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ErrorBodySchema, MintedKeySchema } from '@infer/contracts';
import { UsageRepository } from '@infer/persistence';
import OpenAI from 'openai';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import { type OperatorSession, operatorCall, operatorSession } from '../support/console-session.js';
import { waitFor } from '../support/wait-for.js';
import { type Stack, startStack } from './harness.js';

describe('operator console: changes reach every gateway, audited in the same transaction', () => {
  let stack: Stack;
  let gatewayB: RunningGateway;
  let admin: OperatorSession;

  const call = (method: string, path: string, body?: unknown) =>
    operatorCall(stack.url, admin, method, path, body);
  /** GET /v1/models on gateway B with `key`: its status. */
  const onB = async (key: string) =>
    (await fetch(`${gatewayB.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;
  const auditCount = async (targetId: string) => stack.prisma.auditEvent.count({ where: { targetId } });

  before(async () => {
    // TTLs far beyond the test: only the invalidation message can make B follow within a second.
    stack = await startStack({ env: { KEY_CACHE_TTL_MS: '600000', CATALOG_REFRESH_MS: '600000' } });
    gatewayB = await startGateway(stack.gatewayEnv);
    admin = await operatorSession(stack.url, stack.prisma, {
      email: 'consistency@example.com',
      password: 'consistency password 1',
      role: 'admin',
    });
  });
  after(async () => {
    await stack?.prisma
      .$executeRawUnsafe('DROP TRIGGER IF EXISTS test_refuse ON "AuditEvent"')
      .catch(() => 0);
    await gatewayB?.close();
    await stack?.close();
  });

  async function memberWithKey(name: string) {
    const created = await call('POST', '/admin/members', { name, tier: 'premium' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const minted = await call('POST', `/admin/members/${created.body.id}/keys`, { name: 'k' });
    assert.equal(minted.status, 201, JSON.stringify(minted.body));
    return { memberId: created.body.id as string, ...MintedKeySchema.parse(minted.body) };
  }

  it('a key revoked on gateway A gets 401 on gateway B within a second', async () => {
    const { key, record } = await memberWithKey('revoke-me');
    assert.equal(await onB(key), 200, 'B has looked the key up and caches it');
    assert.equal((await call('POST', `/admin/keys/${record.id}/revoke`)).status, 200);
    await waitFor('gateway B to refuse the revoked key', async () => (await onB(key)) === 401, {
      timeoutMs: 1_000,
    });
  });

  it('a member suspended on A is refused by B within a second, and let back in when unsuspended', async () => {
    const { key, memberId } = await memberWithKey('suspend-me');
    assert.equal(await onB(key), 200);
    assert.equal((await call('PATCH', `/admin/members/${memberId}`, { suspended: true })).status, 200);
    await waitFor('B to refuse the suspended member', async () => (await onB(key)) === 401, {
      timeoutMs: 1_000,
    });
    assert.equal((await call('PATCH', `/admin/members/${memberId}`, { suspended: false })).status, 200);
    await waitFor('B to accept the member again', async () => (await onB(key)) === 200, { timeoutMs: 1_000 });
  });

  it('a model disabled on A is refused by B within a second, and served again once enabled', async () => {
    const b = new OpenAI({ baseURL: `${gatewayB.url}/v1`, apiKey: stack.keys.premium, maxRetries: 0 });
    const listed = async () => (await b.models.list()).data.some((m) => m.id === 'chat-C');
    assert.equal(await listed(), true);
    assert.equal((await call('PATCH', '/admin/models/chat-C', { enabled: false })).status, 200);
    await waitFor('B to drop chat-C', async () => !(await listed()), { timeoutMs: 1_000 });
    const refused = await b.chat.completions
      .create({ model: 'chat-C', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
      .then(
        () => assert.fail('a disabled model answered'),
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    assert.equal(refused.status, 404);
    assert.equal((await call('PATCH', '/admin/models/chat-C', { enabled: true })).status, 200);
    await waitFor('B to list chat-C again', listed, { timeoutMs: 1_000 });
  });

  it('a failed audit insert rolls the change back (suspend, rotate, model disable)', async () => {
    const { key, record, memberId } = await memberWithKey('audit-fails');
    // Refuses the audit rows of these three actions only, for this test's targets.
    await stack.prisma.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION test_refuse_audit() RETURNS trigger AS $$
      BEGIN
        IF NEW."targetId" IN ('${memberId}', '${record.id}', 'chat-D') THEN
          RAISE EXCEPTION 'audit insert refused by the test';
        END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`);
    await stack.prisma.$executeRawUnsafe(
      'CREATE TRIGGER test_refuse BEFORE INSERT ON "AuditEvent" FOR EACH ROW EXECUTE FUNCTION test_refuse_audit()',
    );
    try {
      const suspend = await call('PATCH', `/admin/members/${memberId}`, { suspended: true });
      assert.equal(suspend.status, 500);
      const err = ErrorBodySchema.parse(suspend.body).error;
      assert.doesNotMatch(err.message, /refused by the test|AuditEvent/, 'no internals in the answer');
      const m = await stack.prisma.member.findUniqueOrThrow({ where: { id: memberId } });
      assert.equal(m.suspendedAt, null, 'the suspension was rolled back with its audit row');
      assert.equal(await onB(key), 200, 'the key still works');

      const rotate = await call('POST', `/admin/keys/${record.id}/rotate`);
      assert.equal(rotate.status, 500);
      const keys = await stack.prisma.apiKey.findMany({ where: { memberId } });
      assert.equal(keys.length, 1, 'no new key was minted');
      assert.equal(keys[0]?.revokedAt, null, 'the old key was not revoked');
      assert.equal(keys[0]?.prefix, record.prefix, 'the secret was not replaced');
      assert.equal(await stack.prisma.apiKeySecret.count({ where: { keyId: record.id } }), 0);

      assert.equal((await call('PATCH', '/admin/models/chat-D', { enabled: false })).status, 500);
      const model = await stack.prisma.model.findUniqueOrThrow({ where: { id: 'chat-D' } });
      assert.equal(model.enabled, true, 'the model stays enabled');
      assert.equal(await auditCount(memberId), 1, 'the member has its member.create row only');
    } finally {
      await stack.prisma.$executeRawUnsafe('DROP TRIGGER IF EXISTS test_refuse ON "AuditEvent"');
    }
    // With the audit log working again the same change goes through, audited.
    assert.equal((await call('PATCH', `/admin/members/${memberId}`, { suspended: true })).status, 200);
    const rows = await stack.prisma.auditEvent.findMany({
      where: { targetId: memberId },
      orderBy: { id: 'asc' },
    });
    assert.deepEqual(
      rows.map((r) => r.action),
      ['member.create', 'member.suspend'],
    );
  });

  it('ranks all members over a day range exactly (monthly bounds, then exact daily totals)', async () => {
    // The range 03-04..03-24 is inside March: the monthly rollup also holds 03-02 and 03-25.
    const usage = new UsageRepository(stack.prisma);
    let n = 0;
    const ev = (memberId: string, day: string, totalTokens: number) => ({
      requestId: `rank-${n++}`,
      memberId,
      keyId: `${memberId}-k`,
      model: 'chat-A',
      endpoint: '/v1/chat/completions',
      promptTokens: totalTokens,
      completionTokens: 0,
      totalTokens,
      status: 200,
      latencyMs: 10,
      at: Date.parse(`${day}T12:00:00.000Z`),
    });
    await usage.insertBatch([
      ev('rank-edges', '2026-03-04', 500), // first edge day
      ev('rank-edges', '2026-03-24', 500), // last edge day
      ev('rank-weeks', '2026-03-09', 300),
      ev('rank-weeks', '2026-03-22', 300),
      ev('rank-weeks', '2026-03-02', 5_000), // the Monday before `from`: its week is not whole, not counted
      ev('rank-small', '2026-03-15', 100),
      ev('rank-outside', '2026-03-25', 9_000),
    ]);
    const res = await call('GET', '/admin/usage/daily?from=2026-03-04&to=2026-03-24&group_by=member&top=3');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const totals = new Map<string, number>();
    for (const r of res.body.data as Array<{ member_id: string; total_tokens: number }>)
      totals.set(r.member_id, (totals.get(r.member_id) ?? 0) + r.total_tokens);
    assert.deepEqual(
      [...totals.entries()].sort((a, b) => b[1] - a[1]),
      [
        ['rank-edges', 1000],
        ['rank-weeks', 600],
        ['rank-small', 100],
      ],
    );
    const top1 = await call('GET', '/admin/usage/daily?from=2026-03-04&to=2026-03-24&group_by=member&top=1');
    assert.deepEqual(
      [...new Set((top1.body.data as Array<{ member_id: string }>).map((r) => r.member_id))],
      ['rank-edges'],
    );
    // Eight members whose March is big but mostly outside the range fill all the first guesses (4 x top);
    // the member with the most tokens inside the range has a smaller March and must still win.
    await usage.insertBatch(
      ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].flatMap((x) => [
        ev(`rank-busy-${x}`, '2026-03-28', 50_000),
        ev(`rank-busy-${x}`, '2026-03-10', 10),
      ]),
    );
    await usage.insertBatch([ev('rank-quiet', '2026-03-12', 20_000)]);
    const top2 = await call('GET', '/admin/usage/daily?from=2026-03-04&to=2026-03-24&group_by=member&top=2');
    const byMember = new Map<string, number>();
    for (const r of top2.body.data as Array<{ member_id: string; total_tokens: number }>)
      byMember.set(r.member_id, (byMember.get(r.member_id) ?? 0) + r.total_tokens);
    assert.deepEqual(
      [...byMember.entries()].sort((a, b) => b[1] - a[1]),
      [
        ['rank-quiet', 20_000],
        ['rank-edges', 1000],
      ],
    );
  });

  it('a change that fails leaves no audit row', async () => {
    const { memberId } = await memberWithKey('change-fails');
    await stack.prisma.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION test_refuse_member() RETURNS trigger AS $$
      BEGIN RAISE EXCEPTION 'member update refused by the test'; END $$ LANGUAGE plpgsql`);
    await stack.prisma.$executeRawUnsafe(
      `CREATE TRIGGER test_refuse_member BEFORE UPDATE ON "Member" FOR EACH ROW
         WHEN (OLD."id" = '${memberId}') EXECUTE FUNCTION test_refuse_member()`,
    );
    try {
      const before = await auditCount(memberId);
      assert.equal((await call('PATCH', `/admin/members/${memberId}`, { tier: 'community' })).status, 500);
      assert.equal(await auditCount(memberId), before, 'no member.update row for a change that failed');
    } finally {
      await stack.prisma.$executeRawUnsafe('DROP TRIGGER IF EXISTS test_refuse_member ON "Member"');
    }
  });
});
