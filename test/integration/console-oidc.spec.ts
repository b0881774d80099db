/**
 * Single sign-on for the operator console against a real OpenID provider: the `oidc-provider`
 * package started in this process on a private loopback port, with its development login and
 * consent pages (any password; the login is the account id and the email). The whole flow runs in
 * Debian's Chromium (playwright-core): the sign-in page offers "Sign in with Test IdP", the
 * provider's pages sign in, the console opens signed in. The refusals (unknown email, disabled
 * operator, unverified email) end on the sign-in page with their message; a state mismatch and a
 * provider that is down are driven over HTTP. Every ending is a redirect, never a 500.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OidcConfigSchema } from '@infer/contracts';
import { MembersRepository, OperatorsRepository } from '@infer/persistence';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import { freePort } from '../../bench/support.js';
import { chromiumOptions, noChromium } from '../support/browser.js';
import { loadOidcProvider } from '../support/oidc-provider.js';
import { type Stack, startStack } from './harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const SHOTS = resolve(ROOT, 'var', 'console-oidc', new Date().toISOString().replace(/[:.]/g, '-'));
const CLIENT = { id: 'infer-console', secret: 'test-client-secret-0123456789abcdef' };

describe('operator console: single sign-on with OpenID Connect', { skip: noChromium }, () => {
  let stack: Stack;
  let idp: Server;
  let issuer: string;
  let browser: Browser;
  const tag = Math.random().toString(16).slice(2, 10);

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    console.log(`console OIDC screenshots: ${SHOTS}`);
    const distDir = mkdtempSync(join(tmpdir(), 'infer-console-oidc-'));
    const { build } = await import('vite');
    await build({
      configFile: resolve(ROOT, 'apps/console/vite.config.ts'),
      root: resolve(ROOT, 'apps/console'),
      logLevel: 'warn',
      build: { outDir: distDir, emptyOutDir: true },
    });
    const idpPort = await freePort();
    const gatewayPort = await freePort();
    issuer = `http://127.0.0.1:${idpPort}`;
    const redirect = `http://127.0.0.1:${gatewayPort}/admin/oidc/callback`;
    const Provider = await loadOidcProvider();
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: CLIENT.id,
          client_secret: CLIENT.secret,
          redirect_uris: [redirect],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      claims: { openid: ['sub'], email: ['email', 'email_verified'] },
      cookies: { keys: ['console-oidc-test-cookie-key'] },
      pkce: { required: () => true },
      // The development login accepts any password; the login is the account and its email.
      findAccount: (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: () => ({ sub: id, email: id, email_verified: !id.startsWith('unverified') }),
      }),
    });
    idp = createServer(provider.callback());
    await new Promise<void>((r) => idp.listen(idpPort, '127.0.0.1', r));
    stack = await startStack({
      env: {
        PORT: String(gatewayPort),
        CONSOLE_DIR: distDir,
        CONSOLE_REDIS_PREFIX: `test:coidc:${tag}:`,
        CONSOLE_OIDC_ISSUER: issuer,
        CONSOLE_OIDC_CLIENT_ID: CLIENT.id,
        CONSOLE_OIDC_CLIENT_SECRET: CLIENT.secret,
        CONSOLE_OIDC_REDIRECT_URL: redirect,
        CONSOLE_OIDC_PROVIDER_NAME: 'Test IdP',
      },
    });
    const ops = new OperatorsRepository(stack.prisma);
    await ops.create({ email: 'ada@example.com', role: 'admin' }); // single-sign-on only: no password
    const gone = await ops.create({ email: 'gone@example.com', role: 'viewer' });
    await ops.update(gone.id, { disabled: true });
    await ops.create({ email: 'unverified@example.com', role: 'viewer' });
    browser = await chromium.launch(chromiumOptions);
  });
  after(async () => {
    await browser?.close();
    await stack?.close();
    await new Promise((r) => (idp ? idp.close(r) : r(undefined)));
  });

  /** From the console's sign-in page through the provider's login (and consent) pages and back. */
  async function ssoFlow(login: string, at = '/console/'): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${stack.url}${at}`);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await page.waitForURL(`${issuer}/**`);
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password works here');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    const deadline = Date.now() + 15_000;
    while (!page.url().startsWith(`${stack.url}${at}`)) {
      if (Date.now() > deadline) throw new Error(`stuck at ${page.url()}`);
      const consent = page.getByRole('button', { name: 'Continue' });
      if (await consent.isVisible().catch(() => false)) await consent.click();
      await page.waitForTimeout(50); // a poll step, bounded by the deadline above
    }
    return page;
  }

  it('offers the provider on the sign-in page (axe-checked, screenshotted)', async () => {
    const res = await fetch(`${stack.url}/admin/oidc`);
    assert.deepEqual(OidcConfigSchema.parse(await res.json()), {
      object: 'oidc.config',
      enabled: true,
      provider_name: 'Test IdP',
    });
    const page = await browser.newPage();
    await page.goto(`${stack.url}/console/`);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.evaluate(AXE_SOURCE);
      const bad = await page.evaluate(async () => {
        const r = await (
          globalThis as unknown as {
            axe: { run(): Promise<{ violations: Array<{ id: string; impact: string }> }> };
          }
        ).axe.run();
        return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
      });
      assert.deepEqual(bad, [], `sign-in page @${width}`);
      await page.screenshot({ path: join(SHOTS, `sign-in-sso-${width}.png`), fullPage: true });
    }
    await page.close();
  });

  it('signs an existing operator in through the provider, with an audited server-side session', async () => {
    const page = await ssoFlow('ada@example.com');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.match((await page.locator('header .who').textContent()) ?? '', /ada@example\.com/);
    const cookies = await page.context().cookies(stack.url);
    const session = cookies.find((c) => c.name === 'infer_console_session');
    assert.ok(session?.httpOnly, 'the same HttpOnly session cookie as a password sign-in');
    assert.equal(session?.sameSite, 'Strict');
    const op = await stack.prisma.operator.findUniqueOrThrow({ where: { email: 'ada@example.com' } });
    assert.equal(op.oidcSubject, `${issuer} ada@example.com`, 'the identity is linked on first use');
    const audit = await stack.prisma.auditEvent.findFirstOrThrow({
      where: { action: 'session.sign_in', targetId: op.id },
      orderBy: { id: 'desc' },
    });
    assert.deepEqual(audit.after, { method: 'oidc', issuer, linked: true });
    await page.screenshot({ path: join(SHOTS, 'signed-in-via-sso-1280.png') });
    // Signing out works as for any session.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
    await page.context().close();
  });

  for (const [login, message] of [
    ['nobody@example.com', 'There is no operator account for your email.'],
    ['gone@example.com', 'Your operator account is disabled.'],
    ['unverified@example.com', 'Your email address is not verified at the sign-on provider.'],
  ] as const) {
    it(`refuses ${login} on the sign-in page with a clear message`, async () => {
      const page = await ssoFlow(login);
      await page.getByRole('alert').filter({ hasText: message }).waitFor();
      assert.equal(new URL(page.url()).search, '', 'the code is taken off the address');
      assert.equal(
        (await page.context().cookies(stack.url)).some((c) => c.name === 'infer_console_session'),
        false,
      );
      await page.context().close();
    });
  }

  it('signs a member in to the account pages through the same provider, matched by verified email', async () => {
    await new MembersRepository(stack.prisma).create({
      name: 'Mia Member',
      email: 'mia@example.com',
      tier: 'community',
    });
    const page = await ssoFlow('mia@example.com', '/account/');
    await page.getByRole('heading', { name: 'Mia Member' }).waitFor();
    // A member's session, not an operator's: the console's API refuses it.
    const cookies = await page.context().cookies();
    assert.ok(cookies.some((c) => c.name === 'infer_account_session' && c.path === '/account'));
    assert.ok(!cookies.some((c) => c.name === 'infer_console_session'));
    const console = await page.evaluate("fetch('/admin/session').then((r) => r.status)");
    assert.equal(console, 401);
    // The member signed in by single sign-on makes a key, uses it through the SDK and revokes it.
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.getByLabel('Name').fill('sso laptop');
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    const secret = page.getByTestId('minted-key');
    await secret.waitFor();
    const key = ((await secret.textContent()) ?? '').trim();
    await page.getByRole('button', { name: 'I have stored the key' }).click();
    const sdk = new OpenAI({ baseURL: stack.baseURL, apiKey: key, maxRetries: 0 });
    assert.ok((await sdk.models.list()).data.length > 0);
    await page.getByRole('button', { name: 'Revoke sso laptop' }).click();
    await page.getByRole('button', { name: 'Revoke key', exact: true }).click();
    await page.getByText(/^revoked /).waitFor();
    const after = await sdk.models.list().then(
      () => 200,
      (e: unknown) => (e instanceof OpenAI.APIError ? e.status : e),
    );
    assert.equal(after, 401);
    // An email no member has, and an operator's email, are refused with their message.
    for (const login of ['nobody@example.com', 'ada@example.com']) {
      const refused = await ssoFlow(login, '/account/');
      await refused.getByText('No member account has your verified email').waitFor();
    }
    const unverified = await ssoFlow('unverified-mia@example.com', '/account/');
    await unverified.getByText('Your email address is not verified').waitFor();
  });

  it('refuses a callback whose state does not match the attempt (or with no attempt)', async () => {
    const start = await fetch(`${stack.url}/admin/oidc/start`, { redirect: 'manual' });
    assert.equal(start.status, 302);
    const to = new URL(start.headers.get('location') ?? '');
    assert.equal(to.origin, issuer);
    assert.equal(to.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(to.searchParams.get('nonce') && to.searchParams.get('state'));
    const attempt = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    assert.match(start.headers.get('set-cookie') ?? '', /HttpOnly/i);
    const wrong = await fetch(`${stack.url}/admin/oidc/callback?code=abc&state=not-the-state`, {
      redirect: 'manual',
      headers: { cookie: attempt },
    });
    assert.equal(wrong.status, 302);
    assert.equal(wrong.headers.get('location'), '/console/?sso_error=state_mismatch');
    // The attempt was used up by that try: the right state no longer works either.
    const replay = await fetch(
      `${stack.url}/admin/oidc/callback?code=abc&state=${to.searchParams.get('state')}`,
      { redirect: 'manual', headers: { cookie: attempt } },
    );
    assert.equal(replay.headers.get('location'), '/console/?sso_error=state_mismatch');
    const none = await fetch(`${stack.url}/admin/oidc/callback?code=abc&state=x`, { redirect: 'manual' });
    assert.equal(none.headers.get('location'), '/console/?sso_error=state_mismatch');
  });

  it('sends the browser back with provider_unavailable when the provider is down', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const gw: RunningGateway = await startGateway({
      ...stack.gatewayEnv,
      PORT: '0',
      CONSOLE_OIDC_ISSUER: dead,
      CONSOLE_OIDC_REDIRECT_URL: 'http://127.0.0.1:1/admin/oidc/callback',
    });
    try {
      const res = await fetch(`${gw.url}/admin/oidc/start`, { redirect: 'manual' });
      assert.equal(res.status, 302);
      assert.equal(res.headers.get('location'), '/console/?sso_error=provider_unavailable');
    } finally {
      await gw.close();
    }
  });

  it('does not offer single sign-on when it is not configured', async () => {
    const env = Object.fromEntries(
      Object.entries(stack.gatewayEnv).filter(([k]) => !k.startsWith('CONSOLE_OIDC_')),
    );
    const gw = await startGateway({ ...env, PORT: '0' });
    try {
      const view = OidcConfigSchema.parse(await (await fetch(`${gw.url}/admin/oidc`)).json());
      assert.deepEqual(view, { object: 'oidc.config', enabled: false, provider_name: null });
      const start = await fetch(`${gw.url}/admin/oidc/start`, { redirect: 'manual' });
      assert.equal(start.headers.get('location'), '/console/?sso_error=not_configured');
    } finally {
      await gw.close();
    }
  });
});
