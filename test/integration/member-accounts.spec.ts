/**
 * Members' own accounts (issue 41) and GET /v1/usage (issue 38 item 4), on the real stack: an
 * invitation made with the real admin CLI and the admin API, the password set through the link,
 * sign-in (throttled), the member's own keys (create, rotate with grace, revoke at once on every
 * gateway, MEMBER_MAX_KEYS even under concurrent creations), the audit log with the member as
 * actor, CSRF and same-origin checks, a suspended member refused, and a walk over every account route
 * and every /admin route proving that a member reaches only their own data, an operator's session is
 * not a member's and a member's is not an operator's. The keys are used through the `openai` SDK.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AccountKeyListSchema,
  AccountMintedKeySchema,
  AccountSessionSchema,
  ErrorBodySchema,
  MemberInvitationSchema,
  SelfUsageSchema,
} from '@infer/contracts';
import { MembersRepository, OperatorsRepository } from '@infer/persistence';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import OpenAI from 'openai';
import { AccountController } from '../../apps/gateway/src/account/account.controller.js';
import { ADMIN_ROUTE } from '../../apps/gateway/src/admin/access/admin-route.js';
import { ADMIN_CONTROLLERS } from '../../apps/gateway/src/admin/admin.module.js';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import { IS_PUBLIC } from '../../apps/gateway/src/auth/public.decorator.js';
import { runAdminCli } from '../support/processes.js';
import { waitFor } from '../support/wait-for.js';
import { type LiveStack, startLiveStack } from './harness.js';

const ADMIN_TOKEN = 'members-admin-token-0123456789';
const MAX_KEYS = 3;
const HTTP = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'ALL', 'OPTIONS', 'HEAD'];

interface Browser {
  cookie: string;
  csrf: string;
}

/** Every route a controller class declares: method, path and whether it is open without a session. */
function routesOf(cls: new (...args: never[]) => unknown) {
  const base = String(Reflect.getMetadata(PATH_METADATA, cls) ?? '');
  const out: Array<{ method: string; path: string; open: boolean; adminNeed: unknown }> = [];
  for (const name of Object.getOwnPropertyNames(cls.prototype)) {
    const fn = (cls.prototype as Record<string, unknown>)[name];
    if (typeof fn !== 'function' || name === 'constructor') continue;
    const path = Reflect.getMetadata(PATH_METADATA, fn) as string | undefined;
    const method = Reflect.getMetadata(METHOD_METADATA, fn) as number | undefined;
    if (path === undefined || method === undefined) continue;
    const guarded = (Reflect.getMetadata('__guards__', fn) as unknown[] | undefined)?.length ?? 0;
    out.push({
      method: HTTP[method] ?? 'GET',
      path: `/${[base, path].join('/').split('/').filter(Boolean).join('/')}`,
      open: Boolean(Reflect.getMetadata(IS_PUBLIC, fn)) && guarded === 0,
      adminNeed: Reflect.getMetadata(ADMIN_ROUTE, fn) ?? Reflect.getMetadata(ADMIN_ROUTE, cls),
    });
  }
  return out;
}

function cli(args: string[], env: Record<string, string>) {
  return runAdminCli(args, env);
}

describe('member accounts: invitations, sessions, own keys, usage, isolation', () => {
  let live: LiveStack;
  let replica: RunningGateway;
  let alice: string;
  let bob: string;
  let aliceSession: Browser;
  let bobSession: Browser;
  let operator: Browser;
  const members = () => new MembersRepository(live.stack.prisma);

  const call = async (
    method: string,
    path: string,
    opts: {
      as?: Browser;
      csrf?: string | null;
      body?: unknown;
      headers?: Record<string, string>;
      base?: string;
    } = {},
  ) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.as) headers.cookie = opts.as.cookie;
    const csrf = opts.csrf === undefined ? opts.as?.csrf : opts.csrf;
    if (csrf) headers['x-csrf-token'] = csrf;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${opts.base ?? live.stack.url}${path}`, {
      method,
      headers,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    const text = await res.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field in the assertions
    return { status: res.status, headers: res.headers, body: body as any };
  };
  const code = (body: unknown) => ErrorBodySchema.parse(body).error.code;
  const admin = (method: string, path: string, body?: unknown) =>
    call(method, path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
  const cookieOf = (res: { headers: Headers }) => (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const tokenOf = (url: string) => new URL(url).hash.replace(/^#token=/, '');

  const client = (key: string, baseURL = live.stack.baseURL) =>
    new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
  /** 200, or the status of models.list() with this key. */
  const status = async (key: string, baseURL?: string) => {
    try {
      await client(key, baseURL).models.list();
      return 200;
    } catch (e) {
      if (!(e instanceof OpenAI.APIError)) throw e;
      return e.status ?? 0;
    }
  };

  async function invite(memberId: string, email: string): Promise<string> {
    const res = await admin('POST', `/admin/members/${memberId}/invitations`, { email });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return tokenOf(MemberInvitationSchema.parse(res.body).url);
  }

  async function accept(token: string, password: string): Promise<Browser> {
    const res = await call('POST', '/account/api/invitation', { body: { token, password } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return { cookie: cookieOf(res), csrf: AccountSessionSchema.parse(res.body).csrf_token };
  }

  before(async () => {
    live = await startLiveStack('members', 'members-test', {
      ADMIN_TOKEN,
      MEMBER_MAX_KEYS: String(MAX_KEYS),
      CONSOLE_LOGIN_MAX_FAILURES_ACCOUNT: '3',
      // Only the invalidation can make a revocation reach the other gateway at once.
      KEY_CACHE_TTL_MS: '600000',
    });
    replica = await startGateway(live.stack.gatewayEnv);
    alice = (await members().create({ name: 'Alice', tier: 'inference' })).id;
    bob = (await members().create({ name: 'Bob', email: 'bob@example.com', tier: 'community' })).id;
    await new OperatorsRepository(live.stack.prisma).create({
      email: 'op@example.com',
      role: 'owner',
      password: 'operator password 1',
    });
    const res = await call('POST', '/admin/session', {
      body: { email: 'op@example.com', password: 'operator password 1' },
    });
    assert.equal(res.status, 200);
    operator = { cookie: cookieOf(res), csrf: res.body.csrf_token };
  });
  after(async () => {
    await replica?.close();
    await live?.close();
  });

  it('the admin CLI makes an invitation link; the member sets a password through it, once', async () => {
    const out = await cli(['member', 'invite', alice, '--email', 'Alice@Example.com', '--json'], {
      DATABASE_URL: live.stack.databaseUrl,
      PUBLIC_BASE_URL: live.stack.url,
    });
    assert.equal(out.code, 0, out.stderr);
    const { url } = JSON.parse(out.stdout) as { url: string };
    assert.ok(url.startsWith(`${live.stack.url}/account/invitation#token=`), url);
    const token = tokenOf(url);

    const preview = await call('GET', `/account/api/invitation?token=${token}`);
    assert.equal(preview.status, 200);
    assert.equal(preview.body.email, 'alice@example.com');
    assert.equal(code((await call('GET', '/account/api/invitation?token=nope')).body), 'invitation_invalid');

    const short = await call('POST', '/account/api/invitation', { body: { token, password: 'short' } });
    assert.equal(short.status, 400);
    assert.equal(short.body.error.param, 'password');

    const foreign = await call('POST', '/account/api/invitation', {
      body: { token, password: 'alice password 1' },
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403);

    aliceSession = await accept(token, 'alice password 1');
    const again = await call('POST', '/account/api/invitation', {
      body: { token, password: 'alice password 2' },
    });
    assert.equal(again.status, 410);
    assert.equal(code(again.body), 'invitation_used');

    const me = await call('GET', '/account/api/session', { as: aliceSession });
    assert.equal(me.status, 200);
    const session = AccountSessionSchema.parse(me.body);
    assert.equal(session.member.id, alice);
    assert.equal(session.member.tier, 'inference');
    assert.ok(session.member.models.some((m) => m.endpoints.includes('/v1/chat/completions')));
    assert.equal(session.api_base_url, `${live.stack.url}/v1`);

    const audit = await admin('GET', `/admin/audit?action=member.&target_id=${alice}`);
    const actions = audit.body.data.map((e: { action: string; actor: { type: string } }) => e.action);
    assert.ok(actions.includes('member.invite'), JSON.stringify(actions));
    assert.ok(actions.includes('member.set_password'));
  });

  it('an invitation expires; a newer one voids the older; a reset ends the old sessions', async () => {
    const short = await admin('POST', `/admin/members/${bob}/invitations`, { expires_in: '1s' });
    assert.equal(short.status, 201);
    const expired = tokenOf(short.body.url);
    await waitFor('the invitation to expire', async () => {
      const r = await call('GET', `/account/api/invitation?token=${expired}`);
      return r.status === 410 && code(r.body) === 'invitation_expired';
    });
    const first = await invite(bob, 'bob@example.com');
    const second = await invite(bob, 'bob@example.com');
    assert.equal(code((await call('GET', `/account/api/invitation?token=${first}`)).body), 'invitation_used');
    bobSession = await accept(second, 'bob password 1234');
    // A reset: a new link; using it signs out the session opened before.
    const before = bobSession;
    bobSession = await accept(await invite(bob, 'bob@example.com'), 'bob password 5678');
    assert.equal((await call('GET', '/account/api/keys', { as: before })).status, 401);
    assert.equal((await call('GET', '/account/api/keys', { as: bobSession })).status, 200);
  });

  it('sign-in by password, throttled after repeated failures', async () => {
    const ok = await call('POST', '/account/api/session', {
      body: { email: 'alice@example.com', password: 'alice password 1' },
    });
    assert.equal(ok.status, 200);
    assert.match(ok.headers.get('set-cookie') ?? '', /infer_account_session=.*HttpOnly.*SameSite=Strict/i);
    assert.match(ok.headers.get('set-cookie') ?? '', /Path=\/account/);
    for (let i = 0; i < 3; i++) {
      const bad = await call('POST', '/account/api/session', {
        body: { email: 'bob@example.com', password: 'wrong password!!' },
      });
      assert.equal(bad.status, 401);
      assert.equal(code(bad.body), 'invalid_credentials');
    }
    const blocked = await call('POST', '/account/api/session', {
      body: { email: 'bob@example.com', password: 'bob password 5678' },
    });
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
  });

  it('a member creates a key (shown once) that works through the SDK, rotates it with grace and revokes it: 401 at once on every gateway', async () => {
    const made = await call('POST', '/account/api/keys', { as: aliceSession, body: { name: 'laptop' } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const minted = AccountMintedKeySchema.parse(made.body);
    assert.equal(await status(minted.key), 200);
    assert.equal(await status(minted.key, `${replica.url}/v1`), 200);

    const listed = AccountKeyListSchema.parse(
      (await call('GET', '/account/api/keys', { as: aliceSession })).body,
    );
    const row = listed.data.find((k) => k.id === minted.record.id);
    assert.equal(row?.name, 'laptop');
    assert.equal(row?.prefix, minted.key.slice(0, row?.prefix.length));
    assert.ok(!JSON.stringify(listed).includes(minted.key), 'a listing never holds a secret');

    const rotated = await call('POST', `/account/api/keys/${minted.record.id}/rotate`, {
      as: aliceSession,
      body: { grace: '1h' },
    });
    assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
    const next = AccountMintedKeySchema.parse(rotated.body);
    assert.equal(next.record.id, minted.record.id);
    assert.ok(next.record.old_secret_valid_until);
    assert.equal(await status(next.key), 200);
    assert.equal(await status(minted.key), 200, 'the old secret works during its grace');

    const revoked = await call('POST', `/account/api/keys/${minted.record.id}/revoke`, { as: aliceSession });
    assert.equal(revoked.status, 200);
    assert.equal(await status(next.key), 401);
    assert.equal(await status(minted.key), 401);
    // The replica cached the key for 10 minutes: only the invalidation explains a prompt 401 there.
    await waitFor(
      'the replica to refuse the revoked key',
      async () => (await status(next.key, `${replica.url}/v1`)) === 401,
      {
        timeoutMs: 5_000,
        everyMs: 50,
      },
    );

    const audit = await admin('GET', `/admin/audit?target_id=${minted.record.id}`);
    const entries = audit.body.data as Array<{ action: string; actor: { type: string; id: string } }>;
    for (const action of ['key.create', 'key.rotate', 'key.revoke']) {
      const e = entries.find((x) => x.action === action);
      assert.ok(e, `${action} audited`);
      assert.equal(e.actor.type, 'member');
      assert.equal(e.actor.id, alice);
    }
  });

  it(`at most MEMBER_MAX_KEYS (${MAX_KEYS}) live keys, even when created at once`, async () => {
    const tries = await Promise.all(
      Array.from({ length: MAX_KEYS + 3 }, (_, i) =>
        call('POST', '/account/api/keys', { as: bobSession, body: { name: `k${i}`, expires_in: '30d' } }),
      ),
    );
    assert.equal(tries.filter((r) => r.status === 201).length, MAX_KEYS);
    for (const r of tries.filter((r) => r.status !== 201)) {
      assert.equal(r.status, 409);
      assert.equal(code(r.body), 'too_many_keys');
    }
    const list = AccountKeyListSchema.parse(
      (await call('GET', '/account/api/keys', { as: bobSession })).body,
    );
    assert.equal(list.live, MAX_KEYS);
    assert.equal(list.max_live, MAX_KEYS);
    assert.ok(list.data.every((k) => k.expires_at !== null));
    // Revoking one frees a place.
    await call('POST', `/account/api/keys/${list.data[0]!.id}/revoke`, { as: bobSession });
    assert.equal(
      (await call('POST', '/account/api/keys', { as: bobSession, body: { name: 'again' } })).status,
      201,
    );
  });

  it('every change needs the CSRF token and the gateway’s own origin', async () => {
    const none = await call('POST', '/account/api/keys', {
      as: aliceSession,
      csrf: null,
      body: { name: 'x' },
    });
    assert.equal(none.status, 403);
    assert.equal(code(none.body), 'csrf_failed');
    const wrong = await call('POST', '/account/api/keys', {
      as: aliceSession,
      csrf: 'wrong',
      body: { name: 'x' },
    });
    assert.equal(wrong.status, 403);
    const foreign = await call('POST', '/account/api/keys', {
      as: aliceSession,
      body: { name: 'x' },
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403);
    const signOut = await call('DELETE', '/account/api/session', { as: aliceSession, csrf: null });
    assert.equal(signOut.status, 403);
  });

  it('GET /v1/usage answers the calling key’s and its member’s usage and limits, whatever the parameters', async () => {
    const made = AccountMintedKeySchema.parse(
      (await call('POST', '/account/api/keys', { as: aliceSession, body: { name: 'usage' } })).body,
    );
    const c = client(made.key);
    await c.chat.completions.create({
      model: 'chat-A',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
    });
    const usage = await waitFor('the ledger to count the call', async () => {
      const u = SelfUsageSchema.parse(await c.get('/usage', { query: { member: bob, key: 'x' } }));
      return u.member.usage.requests >= 1 && u.key?.usage.requests ? u : null;
    });
    assert.equal(usage.member.id, alice);
    assert.equal(usage.key?.id, made.record.id);
    assert.ok(usage.daily.some((d) => d.model === 'chat-A' && d.requests >= 1));
    assert.ok(usage.period.start < usage.at && usage.at < usage.period.end);
    assert.ok(usage.limits.length > 0, 'limits are on in this stack');
    for (const l of usage.limits) {
      assert.equal(l.remaining, Math.max(0, l.limit - l.used));
      assert.ok(l.resets_at === null || l.resets_at > usage.at - 1);
    }
    // The account page reads the same service: the member's numbers are the same.
    const page = SelfUsageSchema.parse((await call('GET', '/account/api/usage', { as: aliceSession })).body);
    assert.deepEqual(page.member, usage.member);
    assert.equal(page.key, null);
    assert.ok(page.limits.every((l) => l.scope === 'member'));
    // Bob's numbers hold nothing of Alice's.
    const bobs = SelfUsageSchema.parse((await call('GET', '/account/api/usage', { as: bobSession })).body);
    assert.equal(bobs.member.id, bob);
    assert.equal(bobs.member.usage.requests, 0);
  });

  it('a member session reaches only its own data on every account route, never /admin; an operator session is not a member session', async () => {
    const aliceKeys = AccountKeyListSchema.parse(
      (await call('GET', '/account/api/keys', { as: aliceSession })).body,
    );
    const aliceKey = aliceKeys.data.find((k) => !k.revoked_at)!;
    // Signing out last: Bob's session is used on every route before it ends.
    const routes = routesOf(AccountController as never).sort(
      (a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'),
    );
    assert.ok(routes.length >= 10, `found ${routes.length} account routes`);
    const apiKey = live.stack.keys.premium;
    for (const r of routes) {
      const path = r.path.replace(':key', aliceKey.id);
      const body =
        r.method === 'GET' || r.method === 'DELETE'
          ? undefined
          : r.path.endsWith('rotate')
            ? { grace: '0' }
            : { name: 'n' };
      const what = `${r.method} ${r.path}`;
      // An operator's console session, an API key and no credential at all: never a member.
      const strangers: Array<{ as?: Browser; headers?: Record<string, string> }> = [
        { as: operator },
        { headers: { authorization: `Bearer ${apiKey}` } },
        { headers: { cookie: `infer_console_session=${operator.cookie.split('=')[1]}` } },
      ];
      for (const as of strangers) {
        const res = await call(r.method, path, { ...as, body });
        if (r.open) assert.notEqual(res.status, 200, `${what} opened a session without one`);
        else assert.equal(res.status, 401, `${what} with ${JSON.stringify(Object.keys(as))}: ${res.status}`);
      }
      // Bob's session on Alice's key: like a key that does not exist; lists hold only Bob's own.
      const res = await call(r.method, path, { as: bobSession, body });
      if (r.path.includes(':key')) {
        assert.equal(res.status, 404, what);
        assert.equal(code(res.body), 'key_not_found');
      } else if (r.method === 'GET' && !r.open) {
        assert.equal(res.status, 200, what);
        assert.ok(!JSON.stringify(res.body).includes(alice), `${what} leaked Alice's id`);
        assert.ok(!JSON.stringify(res.body).includes(aliceKey.id), `${what} leaked Alice's key`);
      }
    }
    // Alice's key is untouched by Bob's attempts.
    const still = AccountKeyListSchema.parse(
      (await call('GET', '/account/api/keys', { as: aliceSession })).body,
    );
    assert.equal(still.data.find((k) => k.id === aliceKey.id)?.revoked_at, null);
    assert.equal(still.data.find((k) => k.id === aliceKey.id)?.rotated_at, null);

    // Every /admin route refuses a member's session (sent even on paths the browser would not send it to).
    let checked = 0;
    for (const cls of ADMIN_CONTROLLERS) {
      for (const r of routesOf(cls as never)) {
        if (r.adminNeed === 'sign-in') continue;
        const path = r.path.replace(/:[a-z_]+/gi, 'x');
        const res = await call(r.method, path, { as: bobSession, body: r.method === 'GET' ? undefined : {} });
        assert.equal(res.status, 401, `${r.method} ${r.path} answered ${res.status} to a member session`);
        checked++;
      }
    }
    assert.ok(checked > 30, `walked ${checked} admin routes`);
    assert.equal((await call('GET', '/admin/session', { as: bobSession })).status, 401);
  });

  it('a suspended member cannot sign in, their session ends and their keys stay refused', async () => {
    const carol = (await members().create({ name: 'Carol', tier: 'premium' })).id;
    const carolSession = await accept(await invite(carol, 'carol@example.com'), 'carol password 1');
    const made = AccountMintedKeySchema.parse(
      (await call('POST', '/account/api/keys', { as: carolSession, body: { name: 'before' } })).body,
    );
    assert.equal(await status(made.key), 200);
    assert.equal((await admin('PATCH', `/admin/members/${carol}`, { suspended: true })).status, 200);
    assert.equal(await status(made.key), 401);
    assert.equal(await status(made.key, `${replica.url}/v1`), 401);
    assert.equal((await call('GET', '/account/api/keys', { as: carolSession })).status, 401);
    const signIn = await call('POST', '/account/api/session', {
      body: { email: 'carol@example.com', password: 'carol password 1' },
    });
    assert.equal(signIn.status, 403);
    assert.equal(code(signIn.body), 'member_suspended');
    assert.equal(signIn.headers.get('set-cookie'), null);
    // Not even through a fresh invitation.
    const token = await invite(carol, 'carol@example.com');
    const accepted = await call('POST', '/account/api/invitation', {
      body: { token, password: 'carol password 2' },
    });
    assert.equal(accepted.status, 403);
    assert.equal(code(accepted.body), 'member_suspended');
  });
});
