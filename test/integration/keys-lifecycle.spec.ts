// Key lifecycle through the official SDK and the real stack: expiry (401 key_expired), a model
// allow-list (refused like a tier miss), an IP allow-list behind a trusted proxy (403
// ip_not_allowed, X-Forwarded-For simulates client addresses), rotation with a grace (one stable id,
// the old secret until its grace ends), through the admin API and the admin CLI (--json).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MembersRepository } from '@infer/persistence';
import OpenAI from 'openai';
import { runAdminCli } from '../support/processes.js';
import { waitFor } from '../support/wait-for.js';
import { apiError, type Stack, startStack } from './harness.js';
import { ADMIN_TOKEN } from './limits-support.js';

describe('key lifecycle', () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      env: { ADMIN_TOKEN, TRUSTED_PROXIES: '127.0.0.1', MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.` },
    });
  });
  after(async () => {
    await stack?.close();
  });

  const member = async () =>
    (await new MembersRepository(stack.prisma).create({ name: 'lifecycle', tier: 'inference' })).id;

  const client = (key: string, forwardedFor?: string) =>
    new OpenAI({
      baseURL: stack.baseURL,
      apiKey: key,
      maxRetries: 0,
      ...(forwardedFor ? { defaultHeaders: { 'x-forwarded-for': forwardedFor } } : {}),
    });

  /** The status and code of models.list() with this key (200 when it works). */
  const outcome = async (key: string, forwardedFor?: string) => {
    try {
      await client(key, forwardedFor).models.list();
      return { status: 200, code: null as string | null };
    } catch (e) {
      if (!(e instanceof OpenAI.APIError)) throw e;
      return { status: e.status ?? 0, code: (e.code as string | null) ?? null };
    }
  };

  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${stack.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field in the assertions
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  const cli = (...args: string[]) =>
    runAdminCli(args, {
      DATABASE_URL: stack.databaseUrl,
      NATS_URL: String(stack.gatewayEnv.NATS_URL ?? 'nats://127.0.0.1:4222'),
      MODEL_SUBJECT_PREFIX: String(stack.gatewayEnv.MODEL_SUBJECT_PREFIX ?? ''),
    });

  it('an expired key gets 401 key_expired; the CLI mints with --expires-in and clears it with --expires-at never', async () => {
    const memberId = await member();
    const minted = await cli('key', 'mint', memberId, '--name', 'short', '--expires-in', '1h', '--json');
    assert.equal(minted.code, 0, minted.stderr);
    const { key, record } = JSON.parse(minted.stdout);
    const inAnHour = Date.parse(record.expiresAt) - Date.now();
    assert.ok(inAnHour > 3_500_000 && inAnHour <= 3_600_000, record.expiresAt);
    assert.equal((await outcome(key)).status, 200);
    // Two seconds from now, through the admin API (a cached key follows its cached expiry).
    const soon = new Date(Date.now() + 2_000).toISOString();
    const set = await admin('PATCH', `/admin/keys/${record.id}`, { expires_at: soon });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const expired = await waitFor(
      'the key to expire',
      async () => {
        const o = await outcome(key);
        return o.status === 401 ? o : null;
      },
      { timeoutMs: 20_000, everyMs: 100 },
    );
    assert.equal(expired.code, 'key_expired');

    const listed = await admin('GET', `/admin/keys?sort=expiring&member=${memberId}`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data[0].id, record.id);
    assert.equal(listed.body.data[0].expires_at, Math.floor(Date.parse(soon) / 1000));

    const cleared = await cli('key', 'update', record.id, '--expires-at', 'never', '--json');
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.equal(JSON.parse(cleared.stdout).record.expiresAt, null);
    await waitFor('the key to work again', async () => (await outcome(key)).status === 200, {
      timeoutMs: 20_000,
      everyMs: 50,
    });

    const bad = await cli('key', 'update', record.id, '--expires-in', 'soon', '--json');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--expires-in/);
  });

  it('a model outside allowed_models is refused like a tier miss; /v1/models lists only the allowed ones', async () => {
    const memberId = await member();
    const minted = await admin('POST', `/admin/members/${memberId}/keys`, { allowed_models: ['chat-B'] });
    assert.equal(minted.status, 201, JSON.stringify(minted.body));
    assert.deepEqual(minted.body.record.allowed_models, ['chat-B']);
    const key = minted.body.key as string;
    const ids = (await client(key).models.list()).data.map((m) => m.id);
    assert.deepEqual(ids, ['chat-B']);
    const refused = await apiError(
      client(key).chat.completions.create({ model: 'chat-A', messages: [{ role: 'user', content: 'hi' }] }),
    );
    // Exactly a tier miss: 401 auth_error, invalid_api_key, param model.
    assert.equal(refused.status, 401);
    assert.equal(refused.code, 'invalid_api_key');
    assert.equal(refused.param, 'model');
    assert.equal(refused.type, 'auth_error');

    // Cleared through the admin API: every model the tier reaches again, at once.
    const cleared = await admin('PATCH', `/admin/keys/${minted.body.record.id}`, { allowed_models: [] });
    assert.equal(cleared.status, 200);
    assert.ok((await client(key).models.list()).data.length > 1);
    // The list narrows the tier, never widens it: a premium-only model (chat-G) or an unknown one is
    // refused for an inference member, at mint and at update, naming the field.
    for (const models of [['chat-B', 'chat-G'], ['no-such-model']]) {
      const wider = await admin('POST', `/admin/members/${memberId}/keys`, { allowed_models: models });
      assert.equal(wider.status, 400, JSON.stringify(wider.body));
      assert.equal(wider.body.error.param, 'allowed_models');
      assert.match(wider.body.error.message, new RegExp(models.at(-1) as string));
      const widened = await admin('PATCH', `/admin/keys/${minted.body.record.id}`, {
        allowed_models: models,
      });
      assert.equal(widened.status, 400);
      assert.equal(widened.body.error.param, 'allowed_models');
    }
    const invalid = await admin('PATCH', `/admin/keys/${minted.body.record.id}`, {
      allowed_ips: ['10.0.0/8'],
    });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.param, 'allowed_ips[0]');
  });

  it('allowed_ips: IPv4 and IPv6 clients inside the list pass, others get 403 ip_not_allowed', async () => {
    const memberId = await member();
    const minted = await cli('key', 'mint', memberId, '--ips', '203.0.113.0/24,2001:db8::/32', '--json');
    assert.equal(minted.code, 0, minted.stderr);
    const { key, record } = JSON.parse(minted.stdout);
    assert.deepEqual(record.allowedIps, ['203.0.113.0/24', '2001:db8::/32']);
    assert.equal((await outcome(key, '203.0.113.9')).status, 200);
    assert.equal((await outcome(key, '2001:db8:5::1')).status, 200);
    assert.deepEqual(await outcome(key, '198.51.100.7'), { status: 403, code: 'ip_not_allowed' });
    assert.deepEqual(await outcome(key, '2001:db9::1'), { status: 403, code: 'ip_not_allowed' });
    // Without a forwarded address the client is the proxy itself (127.0.0.1): not in the list.
    assert.deepEqual(await outcome(key), { status: 403, code: 'ip_not_allowed' });
    // A spoofed header from an untrusted hop does not help: only the nearest untrusted address counts.
    assert.deepEqual(await outcome(key, '203.0.113.9, 198.51.100.7'), {
      status: 403,
      code: 'ip_not_allowed',
    });
  });

  it('rotation keeps the key id; the old secret works until its grace ends, then 401; grace 0 revokes it now', async () => {
    const memberId = await member();
    const minted = await cli('key', 'mint', memberId, '--json');
    const { key: first, record } = JSON.parse(minted.stdout);
    assert.equal((await outcome(first)).status, 200);

    const rotated = await cli('key', 'rotate', record.id, '--grace', '10s', '--json');
    assert.equal(rotated.code, 0, rotated.stderr);
    const { key: second, record: after } = JSON.parse(rotated.stdout);
    assert.equal(after.id, record.id);
    assert.notEqual(second, first);
    assert.notEqual(after.prefix, record.prefix);
    assert.ok(after.oldSecretValidUntil);
    assert.equal((await outcome(second)).status, 200);

    const listed = await admin('GET', `/admin/keys?member=${memberId}`);
    assert.equal(listed.body.data.length, 1);
    assert.equal(listed.body.data[0].id, record.id);
    const validUntil = Date.parse(after.oldSecretValidUntil);
    if (Date.now() < validUntil - 1_000) {
      assert.equal(listed.body.data[0].old_secret_valid_until, Math.floor(validUntil / 1000));
    }

    // Inside the grace the old secret still works (unless this machine was slower than 10 s).
    const early = await outcome(first);
    if (Date.now() < validUntil - 500) assert.equal(early.status, 200);
    const ended = await waitFor(
      'the old secret to stop',
      async () => {
        const o = await outcome(first);
        return o.status === 401 ? o : null;
      },
      { timeoutMs: 30_000, everyMs: 100 },
    );
    assert.ok(Date.now() >= validUntil);
    assert.equal(ended.code, 'invalid_api_key');
    assert.equal((await outcome(second)).status, 200);

    // Through the admin API with grace 0: the old secret stops at once, the id stays.
    const now = await admin('POST', `/admin/keys/${record.id}/rotate`, { grace: '0' });
    assert.equal(now.status, 201, JSON.stringify(now.body));
    assert.equal(now.body.record.id, record.id);
    assert.equal(now.body.record.old_secret_valid_until, null);
    assert.equal((await outcome(second)).status, 401);
    assert.equal((await outcome(now.body.key)).status, 200);
  });
});
