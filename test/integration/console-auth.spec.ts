/**
 * Operator accounts, console sessions, CSRF, roles, sign-in throttling and the audit log, end to
 * end: the first owner is created with the real CLI (`operator create --password-stdin`), then a
 * real gateway is driven over HTTP the way the console's browser code does (cookie + X-CSRF-Token).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AuditListSchema, ErrorBodySchema, SessionSchema } from '@infer/contracts';
import { Redis } from 'ioredis';
import { runAdminCli } from '../support/processes.js';
import { type Stack, startStack } from './harness.js';

const ADMIN_TOKEN = 'console-admin-token-0123456789';
const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const VIEWER = { email: 'viewer@example.com', password: 'viewer password 123' };

function cli(args: string[], env: Record<string, string>, stdin: string) {
  return runAdminCli(args, env, { stdin });
}

interface Browser {
  cookie: string;
  csrf: string;
}

describe('operator console: accounts, sessions, CSRF, roles, audit', () => {
  let stack: Stack;
  let redis: Redis;
  const redisPrefix = `test:console:${randomBytes(4).toString('hex')}:`;

  const call = async (
    method: string,
    path: string,
    opts: { as?: Browser; csrf?: string | null; body?: unknown; headers?: Record<string, string> } = {},
  ) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.as) headers.cookie = opts.as.cookie;
    const csrf = opts.csrf === undefined ? opts.as?.csrf : opts.csrf;
    if (csrf) headers['x-csrf-token'] = csrf;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${stack.url}${path}`, {
      method,
      headers,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  const errorCode = (body: unknown) => ErrorBodySchema.parse(body).error.code;

  async function signIn(email: string, password: string): Promise<Browser> {
    const res = await call('POST', '/admin/session', { body: { email, password } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    return { cookie, csrf: SessionSchema.parse(res.body).csrf_token };
  }

  before(async () => {
    stack = await startStack({
      env: {
        ADMIN_TOKEN,
        CONSOLE_REDIS_PREFIX: redisPrefix,
        CONSOLE_LOGIN_MAX_FAILURES_ACCOUNT: '3',
        CONSOLE_LOGIN_MAX_FAILURES_IP: '5',
      },
    });
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  });
  after(async () => {
    const keys = await redis.keys(`${redisPrefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
  });

  it('bootstraps the first owner with the CLI, reading the password from standard input', async () => {
    const env = { DATABASE_URL: stack.databaseUrl };
    const tooShort = await cli(
      ['operator', 'create', '--email', OWNER.email, '--role', 'owner', '--password-stdin'],
      env,
      'short\n',
    );
    assert.equal(tooShort.code, 1);
    assert.match(tooShort.stderr, /at least 12 characters/);
    const ok = await cli(
      [
        'operator',
        'create',
        '--email',
        OWNER.email.toUpperCase(),
        '--role',
        'owner',
        '--password-stdin',
        '--json',
      ],
      env,
      `${OWNER.password}\n`,
    );
    assert.equal(ok.code, 0, ok.stderr);
    const created = JSON.parse(ok.stdout) as { operator: { email: string; role: string } };
    assert.deepEqual([created.operator.email, created.operator.role], [OWNER.email, 'owner']);
    assert.ok(!ok.stdout.includes(OWNER.password));
    const dup = await cli(
      ['operator', 'create', '--email', OWNER.email, '--role', 'admin', '--password-stdin'],
      env,
      `${OWNER.password}\n`,
    );
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /already exists/);
  });

  it('signs in with a session cookie (HttpOnly, SameSite=Strict) and refuses a wrong password', async () => {
    const wrong = await call('POST', '/admin/session', {
      body: { email: OWNER.email, password: 'nope nope nope' },
    });
    assert.equal(wrong.status, 401);
    assert.equal(errorCode(wrong.body), 'invalid_credentials');
    assert.equal(wrong.headers.get('set-cookie'), null);
    const unknown = await call('POST', '/admin/session', {
      body: { email: 'who@example.com', password: 'x' },
    });
    assert.equal(unknown.status, 401);
    assert.equal(errorCode(unknown.body), 'invalid_credentials');
    const bad = await call('POST', '/admin/session', { body: { email: 'not an email', password: 'x' } });
    assert.equal(bad.status, 400);
    assert.equal(ErrorBodySchema.parse(bad.body).error.param, 'email');

    const res = await call('POST', '/admin/session', { body: OWNER });
    assert.equal(res.status, 200);
    const setCookie = res.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /^infer_console_session=[A-Za-z0-9_-]{43};/);
    assert.match(setCookie, /HttpOnly/i);
    assert.match(setCookie, /SameSite=Strict/i);
    assert.match(setCookie, /Path=\//);
    assert.doesNotMatch(setCookie, /Secure/i, 'plain HTTP (development): no Secure flag');
    const session = SessionSchema.parse(res.body);
    assert.equal(session.operator.role, 'owner');
    const me = await call('GET', '/admin/session', {
      as: { cookie: setCookie.split(';')[0] ?? '', csrf: '' },
    });
    assert.equal(me.status, 200);
    assert.equal(SessionSchema.parse(me.body).operator.email, OWNER.email);
    // The session reaches the admin routes that existed before the console.
    const owner = await signIn(OWNER.email, OWNER.password);
    assert.equal((await call('GET', '/admin/usage', { as: owner })).status, 200);
    assert.equal((await call('GET', '/admin/queues', { as: owner })).status, 200);
  });

  it('refuses a mutation without the CSRF token, with a wrong one, or from another origin', async () => {
    const owner = await signIn(OWNER.email, OWNER.password);
    const body = { email: VIEWER.email, role: 'viewer', password: VIEWER.password };
    for (const [csrf, headers] of [
      [null, {}],
      ['x'.repeat(owner.csrf.length), {}],
      [owner.csrf, { origin: 'https://evil.example' }],
    ] as const) {
      const res = await call('POST', '/admin/operators', { as: owner, csrf, body, headers });
      assert.equal(res.status, 403);
      assert.equal(errorCode(res.body), 'csrf_failed');
    }
    const other = await signIn(OWNER.email, OWNER.password);
    const crossed = await call('POST', '/admin/operators', { as: owner, csrf: other.csrf, body });
    assert.equal(crossed.status, 403, "another session's token is not this session's");
    const ok = await call('POST', '/admin/operators', {
      as: owner,
      body,
      headers: { origin: stack.url },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.role, 'viewer');
    const list = await call('GET', '/admin/operators', { as: owner });
    assert.deepEqual((list.body.data as Array<{ email: string }>).map((o) => o.email).sort(), [
      OWNER.email,
      VIEWER.email,
    ]);
  });

  it('lets a viewer read but not change anything (server-side)', async () => {
    const viewer = await signIn(VIEWER.email, VIEWER.password);
    assert.equal((await call('GET', '/admin/usage', { as: viewer })).status, 200);
    assert.equal((await call('GET', '/admin/audit', { as: viewer })).status, 200);
    const ingest = await call('POST', '/admin/search/documents', {
      as: viewer,
      body: { documents: [{ url: 'https://example.com/a', title: 'A', body: 'text' }] },
    });
    assert.equal(ingest.status, 403);
    assert.equal(errorCode(ingest.body), 'insufficient_role');
    const ops = await call('GET', '/admin/operators', { as: viewer });
    assert.equal(ops.status, 403);
    const create = await call('POST', '/admin/operators', {
      as: viewer,
      body: { email: 'x@example.com', role: 'owner', password: 'x'.repeat(12) },
    });
    assert.equal(create.status, 403);
    assert.equal(errorCode(create.body), 'insufficient_role');
  });

  it('records every mutation in the audit log, which filters and cannot be edited', async () => {
    const owner = await signIn(OWNER.email, OWNER.password);
    const viewerId = (await call('GET', '/admin/operators', { as: owner })).body.data.find(
      (o: { email: string }) => o.email === VIEWER.email,
    ).id as string;
    const promote = await call('PATCH', `/admin/operators/${viewerId}`, {
      as: owner,
      body: { role: 'admin' },
    });
    assert.equal(promote.status, 200);
    const audit = AuditListSchema.parse(
      (await call('GET', `/admin/audit?target_id=${viewerId}&action=operator.`, { as: owner })).body,
    );
    assert.deepEqual(
      audit.data.map((e) => e.action),
      ['operator.update', 'operator.create'],
    );
    const [update, create] = audit.data;
    assert.deepEqual(update?.actor, {
      type: 'operator',
      id: (await call('GET', '/admin/session', { as: owner })).body.operator.id,
      label: OWNER.email,
    });
    assert.deepEqual(update?.before, { email: VIEWER.email, role: 'viewer', disabled: false });
    assert.deepEqual(update?.after, { email: VIEWER.email, role: 'admin', disabled: false });
    assert.equal(update?.ip, '127.0.0.1');
    assert.ok(!JSON.stringify(create).includes(VIEWER.password), 'no password in the audit log');
    // The CLI's bootstrap is in the log too.
    const cliRows = AuditListSchema.parse(
      (await call('GET', '/admin/audit?action=operator.create&limit=200', { as: owner })).body,
    ).data.filter((e) => e.actor.type === 'cli');
    assert.equal(cliRows.length, 1);
    // Paging: one row per page, following next_before.
    const seen: string[] = [];
    let before: string | null = null;
    do {
      const page = AuditListSchema.parse(
        (await call('GET', `/admin/audit?limit=1${before ? `&before=${before}` : ''}`, { as: owner })).body,
      );
      seen.push(...page.data.map((e) => e.id));
      before = page.next_before;
    } while (before);
    assert.equal(new Set(seen).size, seen.length);
    assert.ok(seen.length >= 4);
    assert.equal((await call('GET', '/admin/audit?limit=0', { as: owner })).status, 400);
    assert.equal((await call('GET', '/admin/audit?bogus=1', { as: owner })).status, 400);
    // Append-only in the database itself.
    await assert.rejects(
      stack.prisma.$executeRawUnsafe(`UPDATE "AuditEvent" SET "actorLabel" = 'x'`),
      /append-only/,
    );
    await assert.rejects(stack.prisma.$executeRawUnsafe(`DELETE FROM "AuditEvent"`), /append-only/);
    await assert.rejects(stack.prisma.$executeRawUnsafe(`TRUNCATE "AuditEvent"`), /append-only/);
  });

  it('keeps ADMIN_TOKEN for automation, audited as the token', async () => {
    const res = await call('POST', '/admin/operators', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: { email: 'sso@example.com', role: 'viewer' },
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.sso_only, true);
    const wrong = await call('GET', '/admin/audit', {
      headers: { authorization: 'Bearer wrong-token-0123456789' },
    });
    assert.equal(wrong.status, 401);
    assert.equal(errorCode(wrong.body), 'invalid_admin_token');
    const audit = AuditListSchema.parse(
      (
        await call('GET', `/admin/audit?target_id=${res.body.id}`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).body,
    );
    assert.equal(audit.data[0]?.actor.label, 'admin-token');
    // An SSO-only operator cannot sign in with a password.
    const login = await call('POST', '/admin/session', {
      body: { email: 'sso@example.com', password: 'anything at all' },
    });
    assert.equal(login.status, 401);
  });

  it('keeps the last active owner, and disabling an operator ends their sessions', async () => {
    const owner = await signIn(OWNER.email, OWNER.password);
    const me = (await call('GET', '/admin/session', { as: owner })).body.operator.id as string;
    const demote = await call('PATCH', `/admin/operators/${me}`, { as: owner, body: { role: 'admin' } });
    assert.equal(demote.status, 409);
    assert.equal(errorCode(demote.body), 'last_owner');
    const empty = await call('PATCH', `/admin/operators/${me}`, { as: owner, body: {} });
    assert.equal(empty.status, 400);
    const missing = await call('PATCH', '/admin/operators/nobody', { as: owner, body: { disabled: true } });
    assert.equal(missing.status, 404);

    const admin = await signIn(VIEWER.email, VIEWER.password);
    assert.equal((await call('GET', '/admin/session', { as: admin })).status, 200);
    const id = (await call('GET', '/admin/session', { as: admin })).body.operator.id as string;
    assert.equal(
      (await call('PATCH', `/admin/operators/${id}`, { as: owner, body: { disabled: true } })).status,
      200,
    );
    const after = await call('GET', '/admin/usage', { as: admin });
    assert.equal(after.status, 401);
    assert.equal(errorCode(after.body), 'session_expired');
    const again = await call('POST', '/admin/session', { body: VIEWER });
    assert.equal(again.status, 401, 'a disabled operator cannot sign in');
    assert.equal(
      (await call('PATCH', `/admin/operators/${id}`, { as: owner, body: { disabled: false } })).status,
      200,
    );
  });

  it('ends an idle session, and signs out', async () => {
    const a = await signIn(OWNER.email, OWNER.password);
    const b = await signIn(OWNER.email, OWNER.password);
    // Age session a past the idle limit (30 min by default) instead of waiting for it.
    await stack.prisma.$executeRawUnsafe(
      `UPDATE "OperatorSession" SET "lastSeenAt" = now() - interval '31 minutes' WHERE "csrfToken" = $1`,
      a.csrf,
    );
    const idle = await call('GET', '/admin/audit', { as: a });
    assert.equal(idle.status, 401);
    assert.equal(errorCode(idle.body), 'session_expired');
    assert.equal((await call('GET', '/admin/audit', { as: b })).status, 200);

    const noCsrf = await call('DELETE', '/admin/session', { as: b, csrf: null });
    assert.equal(noCsrf.status, 403);
    const out = await call('DELETE', '/admin/session', { as: b });
    assert.equal(out.status, 200);
    assert.match(out.headers.get('set-cookie') ?? '', /infer_console_session=;.*Expires=Thu, 01 Jan 1970/);
    assert.equal((await call('GET', '/admin/session', { as: b })).status, 401);
  });

  it('throttles failed sign-ins per account and per client IP', async () => {
    // Start from zero (the tests above failed some sign-ins from this IP).
    const keys = await redis.keys(`${redisPrefix}*`);
    if (keys.length) await redis.del(...keys);
    for (let i = 0; i < 3; i++) {
      const r = await call('POST', '/admin/session', {
        body: { email: OWNER.email, password: `wrong ${i}` },
      });
      assert.equal(r.status, 401);
    }
    const blocked = await call('POST', '/admin/session', { body: OWNER });
    assert.equal(blocked.status, 429, 'even the right password waits');
    assert.equal(errorCode(blocked.body), 'too_many_sign_ins');
    const retryAfter = Number(blocked.headers.get('retry-after'));
    assert.ok(retryAfter > 0 && retryAfter <= 900, `retry-after ${retryAfter}`);
    // Another account from the same IP still works until the IP's own limit (5 failures).
    await signIn(VIEWER.email, VIEWER.password);
    for (const n of [1, 2]) {
      const r = await call('POST', '/admin/session', {
        body: { email: `guess${n}@example.com`, password: 'x' },
      });
      assert.equal(r.status, 401);
    }
    const ipBlocked = await call('POST', '/admin/session', { body: VIEWER });
    assert.equal(ipBlocked.status, 429);
  });
});
