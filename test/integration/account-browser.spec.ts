/**
 * The members' account pages in Chromium (issue 41), on the real stack with the console built by
 * Vite: an operator invites a member from the console, the member opens the link, sets a password,
 * creates a key (the one-time dialog survives Escape), the key works through the `openai` SDK, the
 * member revokes it and it is refused at once on two gateways; a suspended member cannot sign in.
 * Every page is checked with axe-core and the layout checker at 1440 and 390 px.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { MembersRepository, OperatorsRepository } from '@infer/persistence';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { chromiumOptions, noChromium } from '../support/browser.js';
import {
  axe,
  buildConsole,
  signIn as consoleSignIn,
  layoutProblems,
  shotsDir,
} from '../support/console-browser.js';
import { waitFor } from '../support/wait-for.js';
import { type Stack, startStack, startStackLedger } from './harness.js';

const ADMIN_TOKEN = 'account-browser-admin-token-0123';
const OPERATOR = { email: 'op@example.com', password: 'operator password 1' };
const PASSWORD = 'member password 123';

describe('account pages in Chromium', { skip: noChromium }, () => {
  let stack: Stack;
  let replica: RunningGateway;
  let ledger: LedgerWriter;
  let browser: Browser;
  let distDir: string;
  let memberId: string;
  const shots = shotsDir('account-browser');
  const tag = Math.random().toString(16).slice(2, 10);
  const prefix = `test:acct:${tag}:`;
  const cspErrors: string[] = [];

  /** axe and the layout checker at 1440 and 390 px, with a screenshot of each. */
  async function check(page: Page, name: string): Promise<void> {
    for (const width of [1440, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await axe(page, `${name} @${width}`);
      assert.deepEqual(await layoutProblems(page, 'body'), [], `${name} @${width}`);
      await page.screenshot({ path: `${shots}/${name}-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  }

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    return page;
  }

  const status = async (key: string, baseURL: string) => {
    try {
      await new OpenAI({ baseURL, apiKey: key, maxRetries: 0 }).models.list();
      return 200;
    } catch (e) {
      if (!(e instanceof OpenAI.APIError)) throw e;
      return e.status ?? 0;
    }
  };

  before(async () => {
    console.log(`account screenshots: ${shots}`);
    distDir = await buildConsole();
    stack = await startStack({
      env: {
        ADMIN_TOKEN,
        CONSOLE_DIR: distDir,
        USAGE_STREAM: `USAGE_ACCT${tag.toUpperCase()}`,
        USAGE_SUBJECT_ROOT: `usage_acct${tag}.events`,
        LIMITS_ENABLED: '1',
        LIMITS_REDIS_PREFIX: prefix,
        CONSOLE_REDIS_PREFIX: `${prefix}console:`,
        BULLMQ_PREFIX: `${prefix}bull`,
        // Only the invalidation can make a revocation reach the replica at once.
        KEY_CACHE_TTL_MS: '600000',
      },
    });
    replica = await startGateway(stack.gatewayEnv);
    ledger = await startStackLedger(stack);
    await new OperatorsRepository(stack.prisma).create({ ...OPERATOR, role: 'admin' });
    memberId = (await new MembersRepository(stack.prisma).create({ name: 'Dana Member', tier: 'inference' }))
      .id;
    browser = await chromium.launch(chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await ledger?.stop();
    await replica?.close();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  it('operator invites; the member sets a password, creates a key that works, revokes it: 401 at once everywhere', async () => {
    // The operator, in the console, on the member's page.
    const op = await newPage();
    await consoleSignIn(op, stack.url, OPERATOR);
    await op.goto(`${stack.url}/console/members/${memberId}`);
    await op.getByRole('button', { name: 'Invite to account' }).click();
    await op.getByLabel('Sign-in email').fill('dana@example.com');
    await op.getByRole('button', { name: 'Make the link' }).click();
    const url = (await op.getByTestId('invitation-url').textContent())?.trim() ?? '';
    assert.match(url, /\/account\/invitation#token=/);

    // The member, in a browser of their own.
    const page = await newPage();
    await page.goto(url);
    await page.getByRole('heading', { name: 'Set your password' }).waitFor();
    await page.getByText('dana@example.com').waitFor();
    await check(page, '01-invitation');
    await page.getByLabel('New password').fill('too short');
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await page.getByText('At least 12 characters.', { exact: true }).first().waitFor();
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await page.getByRole('heading', { name: 'Dana Member' }).waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the used token left the address bar');
    await page.getByRole('heading', { name: 'Your tier: inference' }).waitFor();
    await check(page, '02-account-empty');

    // Create a key: the one-time dialog stays through Escape.
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.getByLabel('Name').fill('laptop');
    await page.getByLabel('Expires').selectOption('90 days');
    await check(page, '03-create-dialog');
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    const secret = page.getByTestId('minted-key');
    await secret.waitFor();
    const key = ((await secret.textContent()) ?? '').trim();
    assert.match(key, /^sk-inf-/);
    await page.keyboard.press('Escape');
    assert.ok(await secret.isVisible(), 'Escape does not close the one-time key');
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), key);
    await check(page, '04-secret');
    await page.getByRole('button', { name: 'I have stored the key' }).click();
    await page.getByRole('cell', { name: key.slice(0, 13) }).waitFor();

    // The key works through the openai SDK, on both gateways.
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: key, maxRetries: 0 });
    const done = await client.chat.completions.create({
      model: 'chat-A',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
    });
    assert.ok(done.choices[0]);
    assert.equal(await status(key, `${replica.url}/v1`), 200);

    // Usage by model and day appears once the ledger has it; the "use it" snippets carry the base URL.
    await waitFor(
      'the usage of the call on the account page',
      async () => {
        await page.reload();
        await page.getByRole('heading', { name: 'By day and model' }).waitFor();
        return page.getByRole('cell', { name: 'chat-A' }).count();
      },
      { timeoutMs: 30_000, everyMs: 500 },
    );
    await page.getByRole('button', { name: 'openai SDK (Python)' }).click();
    await page.getByText(`base_url="${stack.url}/v1"`).waitFor();
    await check(page, '05-account-with-key');

    // Revoke, confirmed: 401 at once here and on the replica.
    await page.getByRole('button', { name: 'Revoke laptop' }).click();
    await check(page, '06-revoke-confirm');
    await page.getByRole('button', { name: 'Revoke key', exact: true }).click();
    await page.getByText(/^revoked /).waitFor();
    assert.equal(await status(key, stack.baseURL), 401);
    await waitFor(
      'the replica to refuse the revoked key',
      async () => (await status(key, `${replica.url}/v1`)) === 401,
      {
        timeoutMs: 5_000,
        everyMs: 50,
      },
    );

    // Sign out, sign in again by password.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await check(page, '07-sign-in');
    await page.getByLabel('Email').fill('dana@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dana Member' }).waitFor();
    assert.deepEqual(cspErrors, []);
  });

  it('a suspended member is refused at sign-in and loses the open session', async () => {
    const page = await newPage();
    await page.goto(`${stack.url}/account/`);
    await page.getByLabel('Email').fill('dana@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dana Member' }).waitFor();
    const res = await fetch(`${stack.url}/admin/members/${memberId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ suspended: true }),
    });
    assert.equal(res.status, 200);
    await page.reload();
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByLabel('Email').fill('dana@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Your membership is suspended').waitFor();
    await check(page, '08-suspended');
  });
});
