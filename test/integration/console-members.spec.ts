/**
 * The console's members, keys and models API against a real gateway, as a signed-in operator: keys
 * minted there work against /v1 with the official SDK, revocation and suspension refuse them at
 * once, limit overrides are enforced, models follow enable/disable without a restart.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AdminMemberSchema, AuditListSchema, ErrorBodySchema, MintedKeySchema } from '@infer/contracts';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { type OperatorSession, operatorCall, operatorSession } from '../support/console-session.js';
import { apiError, type Stack, startStack } from './harness.js';

const hi = [{ role: 'user' as const, content: 'hi' }];

type Browser = OperatorSession;

describe('operator console: members, keys, models', () => {
  let stack: Stack;
  let admin: Browser;
  let viewer: Browser;
  const limitsPrefix = `test:clim:${randomBytes(4).toString('hex')}:`;

  const call = (method: string, path: string, as: Browser, body?: unknown) =>
    operatorCall(stack.url, as, method, path, body);
  const client = (key: string) => new OpenAI({ baseURL: stack.baseURL, apiKey: key, maxRetries: 0 });

  const signIn = (email: string, role: 'admin' | 'viewer') =>
    operatorSession(stack.url, stack.prisma, { email, role, password: `${role} password 123` });

  before(async () => {
    stack = await startStack({ env: { LIMITS_ENABLED: '1', LIMITS_REDIS_PREFIX: limitsPrefix } });
    admin = await signIn('admin@example.com', 'admin');
    viewer = await signIn('viewer@example.com', 'viewer');
  });
  after(async () => {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${limitsPrefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
  });

  it('creates a member, mints a key shown once that works on /v1/models, revokes it (401 at once)', async () => {
    const created = await call('POST', '/admin/members', admin, { name: '<b>Ada</b>', tier: 'community' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const member = AdminMemberSchema.parse(created.body);
    assert.equal(member.name, '<b>Ada</b>', 'stored as given; the console renders it escaped');
    const minted = await call('POST', `/admin/members/${member.id}/keys`, admin, { name: 'laptop' });
    assert.equal(minted.status, 201);
    const { key, record } = MintedKeySchema.parse(minted.body);
    assert.ok(key.startsWith(record.prefix));
    const models = await client(key).models.list();
    assert.ok(models.data.some((m) => m.id === 'chat-A'));
    // The key is never shown again: the member's detail has the prefix only.
    const detail = await call('GET', `/admin/members/${member.id}`, viewer);
    assert.equal(detail.status, 200);
    assert.ok(!JSON.stringify(detail.body).includes(key));
    assert.equal(detail.body.api_keys[0].prefix, record.prefix);

    const revoked = await call('POST', `/admin/keys/${record.prefix}/revoke`, admin);
    assert.equal(revoked.status, 200);
    assert.ok(revoked.body.revoked_at);
    const err = await apiError(client(key).models.list());
    assert.equal(err.status, 401);
    const audit = AuditListSchema.parse(
      (await call('GET', `/admin/audit?target_id=${record.id}`, viewer)).body,
    );
    assert.deepEqual(
      audit.data.map((e) => e.action),
      ['key.revoke', 'key.mint'],
    );
  });

  it('suspends a member (its keys get 401 at once) and changes its tier', async () => {
    const member = AdminMemberSchema.parse(
      (await call('POST', '/admin/members', admin, { name: 'Bo', tier: 'community' })).body,
    );
    const { key } = MintedKeySchema.parse(
      (await call('POST', `/admin/members/${member.id}/keys`, admin, {})).body,
    );
    const premiumOnly = async () => (await client(key).models.list()).data.some((m) => m.id === 'chat-G');
    assert.equal(await premiumOnly(), false);
    const up = await call('PATCH', `/admin/members/${member.id}`, admin, { tier: 'premium' });
    assert.equal(up.status, 200);
    assert.equal(await premiumOnly(), true, 'the new tier applies at once');

    assert.equal(
      (await call('PATCH', `/admin/members/${member.id}`, admin, { suspended: true })).status,
      200,
    );
    assert.equal((await apiError(client(key).models.list())).status, 401);
    assert.equal(
      (await call('PATCH', `/admin/members/${member.id}`, admin, { suspended: false })).status,
      200,
    );
    assert.equal(await premiumOnly(), true);
    const actions = AuditListSchema.parse(
      (await call('GET', `/admin/audit?target_id=${member.id}&action=member.`, viewer)).body,
    ).data.map((e) => e.action);
    assert.deepEqual(actions, ['member.unsuspend', 'member.suspend', 'member.update', 'member.create']);
  });

  it('enforces a limit override set through the API, and clears it', async () => {
    const member = AdminMemberSchema.parse(
      (await call('POST', '/admin/members', admin, { name: 'Cy', tier: 'inference' })).body,
    );
    const { key, record } = MintedKeySchema.parse(
      (await call('POST', `/admin/members/${member.id}/keys`, admin, {})).body,
    );
    const set = await call('PUT', `/admin/keys/${record.id}/limits`, admin, {
      limits: { key: { requests_per_minute: 1 } },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.limits, { key: { requests_per_minute: 1 } });
    const c = client(key);
    await c.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 2 });
    const refused = await apiError(
      c.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 2 }),
    );
    assert.equal(refused.status, 429);
    const bad = await call('PUT', `/admin/keys/${record.id}/limits`, admin, {
      limits: { key: { requests_per_minute: -1 } },
    });
    assert.equal(bad.status, 400);
    assert.match(ErrorBodySchema.parse(bad.body).error.param ?? '', /^limits\.key\.requests_per_minute$/);
    const cleared = await call('PUT', `/admin/keys/${record.id}/limits`, admin, { limits: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.limits, null);
  });

  it('rotates a key: same id, the new secret works with the same limits, grace 0 stops the old one at once', async () => {
    const member = AdminMemberSchema.parse(
      (await call('POST', '/admin/members', admin, { name: 'Ro', tier: 'inference' })).body,
    );
    const old = MintedKeySchema.parse(
      (await call('POST', `/admin/members/${member.id}/keys`, admin, { name: 'ci' })).body,
    );
    await call('PUT', `/admin/keys/${old.record.id}/limits`, admin, {
      limits: { key: { requests_per_minute: 7 } },
    });
    const rotated = await call('POST', `/admin/keys/${old.record.prefix}/rotate`, admin, { grace: '0' });
    assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
    const fresh = MintedKeySchema.parse(rotated.body);
    assert.notEqual(fresh.key, old.key);
    assert.equal(fresh.record.id, old.record.id);
    assert.notEqual(fresh.record.prefix, old.record.prefix);
    assert.equal(fresh.record.name, 'ci');
    assert.deepEqual(fresh.record.limits, { key: { requests_per_minute: 7 } });
    assert.equal((await apiError(client(old.key).models.list())).status, 401);
    assert.ok((await client(fresh.key).models.list()).data.length > 0);
    assert.equal((await call('POST', `/admin/keys/${fresh.record.id}/rotate`, viewer)).status, 403);
    const audit = AuditListSchema.parse(
      (await call('GET', `/admin/audit?target_id=${old.record.id}`, viewer)).body,
    );
    assert.equal(audit.data[0]?.action, 'key.rotate');
    assert.equal(
      (audit.data[0]?.after as { old_prefix?: string } | undefined)?.old_prefix,
      old.record.prefix,
    );
    await call('POST', `/admin/keys/${fresh.record.id}/revoke`, admin);
    assert.equal((await call('POST', `/admin/keys/${fresh.record.id}/rotate`, admin)).status, 409);
  });

  it('searches and pages members on the server', async () => {
    const tag = randomBytes(3).toString('hex');
    for (let i = 0; i < 7; i++)
      await call('POST', '/admin/members', admin, { name: `page-${tag}-${i}`, tier: 'community' });
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const page = await call(
        'GET',
        `/admin/members?q=PAGE-${tag}&limit=3${after ? `&after=${after}` : ''}`,
        viewer,
      );
      assert.equal(page.status, 200);
      assert.ok(page.body.data.length <= 3);
      seen.push(...page.body.data.map((m: { name: string }) => m.name));
      after = page.body.next_after;
    } while (after);
    assert.deepEqual(
      seen,
      Array.from({ length: 7 }, (_, i) => `page-${tag}-${6 - i}`),
      'newest first, each once',
    );
    const bad = await call('GET', '/admin/members?tier=gold', viewer);
    assert.equal(bad.status, 400);
    assert.equal(ErrorBodySchema.parse(bad.body).error.param, 'tier');
  });

  it('disables and enables a model live', async () => {
    const c = stack.client('premium');
    const has = async () => (await c.models.list()).data.some((m) => m.id === 'chat-B');
    assert.equal(await has(), true);
    const off = await call('PATCH', '/admin/models/chat-B', admin, { enabled: false });
    assert.equal(off.status, 200);
    assert.equal(await has(), false);
    const listed = await call('GET', '/admin/models', viewer);
    assert.equal(listed.body.data.find((m: { id: string }) => m.id === 'chat-B').enabled, false);
    assert.equal((await call('PATCH', '/admin/models/chat-B', admin, { enabled: true })).status, 200);
    assert.equal(await has(), true);
    assert.equal((await call('PATCH', '/admin/models/nope', admin, { enabled: true })).status, 404);
  });

  it('reads usage charts from the rollups, with a server-enforced range', async () => {
    const long = await call('GET', '/admin/usage/daily?from=2024-01-01&to=2026-01-01', viewer);
    assert.equal(long.status, 400);
    assert.equal(ErrorBodySchema.parse(long.body).error.param, 'from');
    const bad = await call('GET', '/admin/usage/daily?from=yesterday', viewer);
    assert.equal(bad.status, 400);
    assert.equal(ErrorBodySchema.parse(bad.body).error.param, 'from');
    const reversed = await call('GET', '/admin/usage/daily?from=2026-02-02&to=2026-02-01', viewer);
    assert.equal(reversed.status, 400);
    const ok = await call('GET', '/admin/usage/daily?group_by=member', viewer);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.object, 'usage.daily');
    assert.equal((await call('GET', '/admin/usage/hourly?hours=0', viewer)).status, 400);
    assert.equal((await call('GET', '/admin/usage/hourly', viewer)).status, 200);
  });

  it('refuses every change from a viewer and validates input', async () => {
    const m = AdminMemberSchema.parse(
      (await call('POST', '/admin/members', admin, { name: 'Di', tier: 'community' })).body,
    );
    for (const [method, path, body] of [
      ['POST', '/admin/members', { name: 'x', tier: 'community' }],
      ['PATCH', `/admin/members/${m.id}`, { suspended: true }],
      ['POST', `/admin/members/${m.id}/keys`, {}],
      ['PATCH', '/admin/models/chat-A', { enabled: false }],
    ] as const) {
      const r = await call(method, path, viewer, body);
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.equal(ErrorBodySchema.parse(r.body).error.code, 'insufficient_role');
    }
    const noTier = await call('POST', '/admin/members', admin, { name: 'x' });
    assert.equal(noTier.status, 400);
    assert.equal(ErrorBodySchema.parse(noTier.body).error.param, 'tier');
    const anchor = await call('PATCH', `/admin/members/${m.id}`, admin, { billing_anchor: '2026-01-15' });
    assert.equal(anchor.status, 200);
    assert.equal(anchor.body.billing_anchor, Date.parse('2026-01-15T00:00:00Z') / 1000);
    const badAnchor = await call('PATCH', `/admin/members/${m.id}`, admin, { billing_anchor: 'soon' });
    assert.equal(badAnchor.status, 400);
    assert.equal(ErrorBodySchema.parse(badAnchor.body).error.param, 'billing_anchor');
    const empty = await call('PATCH', `/admin/members/${m.id}`, admin, {});
    assert.equal(empty.status, 400);
    assert.equal((await call('GET', '/admin/members/not-a-member', viewer)).status, 404);
    assert.equal((await call('POST', '/admin/members/not-a-member/keys', admin, {})).status, 404);
  });
});
