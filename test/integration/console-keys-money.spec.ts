/**
 * Keys and money as operators use them, in Debian's Chromium against the real stack (gateway,
 * chat-service, ledger writer delivering alerts to a webhook receiver this test runs): a key minted
 * from the console with an expiry, allowed models and allowed IPs is used through the openai SDK (the
 * allowed model answers, another model and another address are refused, an expired key is refused);
 * a rotation with a grace keeps both secrets working and shows until when; limits and the member's
 * budget are edited as forms and enforced by the gateway; the Alerts page lists the fired alert and
 * its delivery log. Every dialog and page is checked with axe and the layout checker at 1440 and
 * 390 px and screenshotted into the folder printed at the start.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MembersRepository, OperatorsRepository } from '@infer/persistence';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { parse, stringify } from 'yaml';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { chromiumOptions, noChromium } from '../support/browser.js';
import { axe, buildConsole, layoutProblems, shotsDir, signIn } from '../support/console-browser.js';
import { waitFor } from '../support/wait-for.js';
import { apiError, type Stack, startStack, startStackLedger } from './harness.js';

const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const SECRET = 'console-alert-secret-0123456789abcdef';
const POLL = { timeoutMs: 20_000, everyMs: 100 };
const hi = [{ role: 'user' as const, content: 'hi' }];

/** config/models.yaml with chat-A at $0.001 a token in and out: a short request costs about a cent. */
function pricedCatalog(dir: string): string {
  const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as {
    models: Array<Record<string, unknown>>;
  };
  for (const m of catalog.models)
    if (m.id === 'chat-A') m.pricing = { input_per_million: '1000', output_per_million: '1000' };
  const file = join(dir, 'catalog.yaml');
  writeFileSync(file, stringify(catalog));
  return file;
}

describe('console: key lifecycle, limit and budget forms, alerts (Chromium)', { skip: noChromium }, () => {
  let stack: Stack;
  let ledger: LedgerWriter;
  let browser: Browser;
  let page: Page;
  let distDir: string;
  let receiver: Server;
  let memberId: string;
  let dir: string;
  const shots = shotsDir('console-keys-money');
  const received: Array<{ id: string; ok: boolean }> = [];
  const client = (key: string) => new OpenAI({ baseURL: stack.baseURL, apiKey: key, maxRetries: 0 });

  /**
   * axe, the layout checker (on `scope`) and a screenshot, at 1440 and at 390 px. `splitWords: false`
   * where a whole API secret is shown: 48 characters without a space cannot fit a phone's width.
   */
  async function check(name: string, scope = 'main', opts: { splitWords?: boolean } = {}): Promise<void> {
    try {
      for (const width of [1440, 390]) {
        await page.setViewportSize({ width, height: 900 });
        const box = await page.locator(scope).first().boundingBox();
        assert.ok(
          box && box.width > 100 && box.height > 100,
          `${name} @${width}: ${scope} shown (${JSON.stringify(box)})`,
        );
        await axe(page, `${name} @${width}`);
        // A modal dialog is in the top layer, fixed to the viewport: shot as the screen shows it.
        await page.screenshot({ path: join(shots, `${name}-${width}.png`), fullPage: scope === 'main' });
        assert.deepEqual(await layoutProblems(page, scope, opts), [], `${name} @${width}`);
      }
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  }

  const dialog = () => page.locator('dialog[open]');

  async function mintedSecret(): Promise<string> {
    const key = (await page.getByTestId('minted-key').textContent())?.trim() ?? '';
    assert.match(key, /^sk-/);
    return key;
  }

  before(async () => {
    console.log(`console screenshots: ${shots}`);
    dir = mkdtempSync(join(tmpdir(), 'infer-ckm-'));
    // The webhook receiver: checks the HMAC signature, refuses each alert's first delivery (500) and
    // accepts the retry, so the delivery log has two attempts.
    const seen = new Set<string>();
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['x-infer-signature'] ?? ''));
        if (!m || createHmac('sha256', SECRET).update(`${m[1]}.${body}`).digest('hex') !== m[2]) {
          res.writeHead(401).end();
          return;
        }
        const { id } = JSON.parse(body) as { id: string };
        received.push({ id, ok: seen.has(id) });
        res.writeHead(seen.has(id) ? 204 : 500).end();
        seen.add(id);
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    distDir = await buildConsole();
    stack = await startStack({
      catalogFile: pricedCatalog(dir),
      env: { CONSOLE_DIR: distDir, LIMITS_ENABLED: '1' },
    });
    ledger = await startStackLedger(stack, {
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/infer`,
      ALERT_WEBHOOK_SECRET: SECRET,
      ALERT_POLL_MS: '100',
      ALERT_BACKOFF_MS: '200',
    });
    await new OperatorsRepository(stack.prisma).create({ ...OWNER, role: 'owner' });
    memberId = (await new MembersRepository(stack.prisma).create({ name: 'Grace Hopper', tier: 'inference' }))
      .id;
    browser = await chromium.launch(chromiumOptions);
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await signIn(page, stack.url, OWNER);
  });

  after(async () => {
    // The page as the last test left it (a failure's state).
    await page?.screenshot({ path: join(shots, 'zz-last.png'), fullPage: true }).catch(() => undefined);
    await browser?.close();
    await ledger?.stop();
    await stack?.close();
    await new Promise((r) => receiver?.close(r));
    if (distDir) rmSync(distDir, { recursive: true, force: true });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const memberPage = async () => {
    await page.goto(`${stack.url}/console/members/${memberId}`);
    await page.getByRole('heading', { name: 'Grace Hopper' }).waitFor();
  };
  const prefixOf = async (name: string) =>
    (await stack.prisma.apiKey.findFirstOrThrow({ where: { memberId, name } })).prefix;

  it('mints a key with an expiry, allowed models and IPs; the SDK gets the allowed model only, from allowed addresses only', async () => {
    await memberPage();
    await page.getByRole('button', { name: 'Mint key' }).click();
    const d = dialog();
    await d.getByLabel('Key name').fill('deploy');
    await d.getByLabel('Expires', { exact: true }).selectOption('in');
    await d.getByLabel('Expires in').fill('30d');
    // The models the inference tier reaches are offered; chat-G (premium) is not.
    await d.getByRole('checkbox', { name: 'chat-A' }).check();
    assert.equal(await d.getByRole('checkbox', { name: 'chat-G' }).count(), 0);
    const ips = d.getByLabel(/Allowed IP addresses/);
    await ips.fill('10.0.0.300\n127.0.0.1\nnot-an-address');
    await d.getByRole('button', { name: 'Mint' }).click();
    // One sentence per bad entry, beside the field; nothing minted.
    await d.getByText('“10.0.0.300” is not an IP address or CIDR block').waitFor();
    await d.getByText('“not-an-address” is not an IP address or CIDR block').waitFor();
    assert.equal(await stack.prisma.apiKey.count({ where: { memberId, name: 'deploy' } }), 0);
    await check('01-mint-form-errors', 'dialog[open]');
    await ips.fill('127.0.0.1\n::1/128');
    await d.getByRole('button', { name: 'Mint' }).click();
    const key = await mintedSecret();
    await check('02-minted-once', 'dialog[open]', { splitWords: false });
    await dialog().getByRole('button', { name: 'I have stored the key' }).click();

    const stored = await stack.prisma.apiKey.findFirstOrThrow({ where: { memberId, name: 'deploy' } });
    assert.deepEqual(stored.allowedModels, ['chat-A']);
    assert.deepEqual(stored.allowedIps, ['127.0.0.1/32', '::1/128']);
    const days = ((stored.expiresAt?.getTime() ?? 0) - Date.now()) / 86_400_000;
    assert.ok(days > 29.9 && days <= 30, `expires in ${days} d`);
    const row = page.getByRole('row').filter({ hasText: stored.prefix });
    await row.getByText('expires in 30 d').waitFor();
    await row.getByText('chat-A').waitFor();
    await check('03-member-keys');

    const sdk = client(key);
    assert.deepEqual(
      (await sdk.models.list()).data.map((m) => m.id),
      ['chat-A'],
    );
    const ok = await sdk.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 2 });
    assert.equal(ok.object, 'chat.completion');
    const other = await apiError(
      sdk.chat.completions.create({ model: 'chat-B', messages: hi, max_tokens: 2 }),
    );
    assert.equal(other.status, 401);
    assert.equal(other.param, 'model');

    // Edit: only another network may use the key now (403 ip_not_allowed from 127.0.0.1).
    await row.getByRole('button', { name: `Edit ${stored.prefix}` }).click();
    await dialog()
      .getByLabel(/Allowed IP addresses/)
      .fill('203.0.113.0/24');
    await check('04-edit-key', 'dialog[open]');
    await dialog().getByRole('button', { name: 'Save' }).click();
    await row.getByText('203.0.113.0/24').waitFor();
    const refused = await apiError(
      sdk.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 2 }),
    );
    assert.equal(refused.status, 403);
    assert.equal(refused.code, 'ip_not_allowed');
  });

  it('an expired key is refused with 401 key_expired and marked expired; the Keys page sorts expiring soonest first', async () => {
    await memberPage();
    await page.getByRole('button', { name: 'Mint key' }).click();
    await dialog().getByLabel('Key name').fill('short-lived');
    await dialog().getByLabel('Expires', { exact: true }).selectOption('in');
    await dialog().getByLabel('Expires in').fill('3s');
    await dialog().getByRole('button', { name: 'Mint' }).click();
    const key = await mintedSecret();
    await dialog().getByRole('button', { name: 'I have stored the key' }).click();
    const expired = await waitFor(
      'the key to expire',
      async () => {
        const e = await apiError(client(key).models.list()).catch(() => null);
        return e?.status === 401 ? e : null;
      },
      POLL,
    );
    assert.equal(expired.code, 'key_expired');

    await page.getByRole('navigation').getByRole('link', { name: 'Keys' }).click();
    await page.getByRole('heading', { name: 'Keys', exact: true }).waitFor();
    await page.getByLabel('Order').selectOption('expiring');
    await page.waitForURL(/sort=expiring/);
    const shortLived = await prefixOf('short-lived');
    const expected = [shortLived, await prefixOf('deploy')];
    await waitFor(
      'the keys expiring soonest first',
      async () =>
        JSON.stringify(await page.locator('tbody tr td[data-label="Prefix"]').allTextContents()) ===
        JSON.stringify(expected),
      POLL,
    );
    await page
      .getByRole('row')
      .filter({ hasText: shortLived })
      .getByText('expired', { exact: true })
      .waitFor();
    await check('05-keys-expiring');
  });

  it('rotates with a grace asked first: old and new secrets both work, "old secret valid until" is shown', async () => {
    await memberPage();
    await page.getByRole('button', { name: 'Mint key' }).click();
    await dialog().getByLabel('Key name').fill('ci');
    await dialog().getByRole('button', { name: 'Mint' }).click();
    const old = await mintedSecret();
    await dialog().getByRole('button', { name: 'I have stored the key' }).click();
    const prefix = await prefixOf('ci');
    const row = page.getByRole('row').filter({ hasText: prefix });
    await row.getByRole('button', { name: `Rotate key ${prefix}` }).click();
    const grace = dialog().getByLabel('Grace period of the old secret');
    assert.equal(await grace.inputValue(), '24h', 'the default grace');
    await grace.fill('soon');
    await dialog().getByRole('button', { name: 'Rotate key' }).click();
    await dialog().getByText('“soon” is not a grace period').waitFor();
    await grace.fill('2h');
    await check('06-rotate-confirm', 'dialog[open]');
    await dialog().getByRole('button', { name: 'Rotate key' }).click();
    await page.getByTestId('grace-note').waitFor();
    const fresh = await mintedSecret();
    assert.notEqual(fresh, old);
    const ci = await stack.prisma.apiKey.findFirstOrThrow({ where: { memberId, name: 'ci' } });
    const until = (await stack.prisma.apiKeySecret.findFirstOrThrow({ where: { keyId: ci.id } })).graceUntil;
    const hours = (until.getTime() - Date.now()) / 3_600_000;
    assert.ok(hours > 1.9 && hours <= 2, `grace of ${hours} h`);
    const shown = `${until.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    assert.match((await page.getByTestId('grace-note').textContent()) ?? '', new RegExp(`until ${shown}`));
    await check('07-rotated-once', 'dialog[open]', { splitWords: false });
    await dialog().getByRole('button', { name: 'I have stored the key' }).click();
    // The same key (same id, new prefix), with the old secret's end where the key is shown.
    const newPrefix = await prefixOf('ci');
    await page
      .getByRole('row')
      .filter({ hasText: newPrefix })
      .getByText(`old secret valid until ${shown}`)
      .waitFor();
    for (const secret of [old, fresh]) {
      const r = await client(secret).chat.completions.create({
        model: 'chat-B',
        messages: hi,
        max_tokens: 2,
      });
      assert.equal(r.object, 'chat.completion');
    }
  });

  it('edits limits through the form (a bad value named beside its field); the gateway enforces the saved value', async () => {
    await memberPage();
    await page.getByRole('button', { name: 'Mint key' }).click();
    await dialog().getByLabel('Key name').fill('limited');
    await dialog().getByRole('button', { name: 'Mint' }).click();
    const key = await mintedSecret();
    await dialog().getByRole('button', { name: 'I have stored the key' }).click();
    const prefix = await prefixOf('limited');
    await page
      .getByRole('row')
      .filter({ hasText: prefix })
      .getByRole('button', { name: `Limits of ${prefix}` })
      .click();
    const d = dialog();
    const rpm = d.getByLabel('Requests per minute', { exact: true }).first();
    // The tier's value is shown as what "inherited" means.
    assert.match((await rpm.locator('option:checked').textContent()) ?? '', /inherited from tier \(60\)/);
    await rpm.selectOption('value');
    const value = d.getByRole('textbox', { name: 'Requests per minute', exact: true });
    await value.fill('-1');
    await d.getByRole('button', { name: 'Save limits' }).click();
    await d.getByText('Requests per minute must be a whole number, 0 or more.').waitFor();
    assert.equal(await value.getAttribute('aria-invalid'), 'true');
    await check('08-limits-form-error', 'dialog[open]');
    await value.fill('1');
    await d.getByRole('button', { name: 'Save limits' }).click();
    await waitFor(
      'the dialog to close',
      async () => (await page.locator('dialog[open]').count()) === 0,
      POLL,
    );
    const stored = await stack.prisma.apiKey.findFirstOrThrow({ where: { memberId, name: 'limited' } });
    assert.deepEqual(stored.limits, { key: { requests_per_minute: 1 } });
    // The audit log keeps the limit values (only secrets are redacted).
    const audit = await stack.prisma.auditEvent.findFirstOrThrow({
      where: { targetId: stored.id, action: 'key.set_limits' },
    });
    assert.deepEqual((audit.after as { limits: unknown }).limits, { key: { requests_per_minute: 1 } });
    const sdk = client(key);
    await sdk.chat.completions.create({ model: 'chat-B', messages: hi, max_tokens: 2 });
    const limited = await apiError(
      sdk.chat.completions.create({ model: 'chat-B', messages: hi, max_tokens: 2 }),
    );
    assert.equal(limited.status, 429);
  });

  it("sets the member's budget through its form; a spent budget is 402; the Alerts page lists the fired alerts and their delivery log", async () => {
    await memberPage();
    await page.getByLabel('Monthly budget of the member').selectOption('value');
    const amount = page.getByLabel('Budget (USD)');
    await amount.fill('two cents');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByText('The budget must be an amount of dollars').waitFor();
    await amount.fill('0.02');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const m = await stack.prisma.member.findUniqueOrThrow({ where: { id: memberId } });
    assert.deepEqual(m.limits, { budget: { member_per_month: '0.02' } });
    await check('09-member-budget');

    // chat-A costs $0.001 a token: a few requests spend $0.02, then 402 budget_exceeded.
    const sdkKey = await (async () => {
      await page.getByRole('button', { name: 'Mint key' }).click();
      await dialog().getByLabel('Key name').fill('spender');
      await dialog().getByRole('button', { name: 'Mint' }).click();
      const k = await mintedSecret();
      await dialog().getByRole('button', { name: 'I have stored the key' }).click();
      return k;
    })();
    const sdk = client(sdkKey);
    let status = 200;
    for (let i = 0; i < 20 && status === 200; i++) {
      status = await sdk.chat.completions
        .create({ model: 'chat-A', messages: hi, max_tokens: 4 })
        .then(() => 200)
        .catch((e: unknown) => (e instanceof OpenAI.APIError ? (e.status ?? 0) : 0));
    }
    assert.equal(status, 402);
    await waitFor(
      'the 100 % alert delivered (after one refused attempt)',
      () =>
        stack.prisma.alertEvent.findFirst({
          where: { memberId, threshold: 100, status: 'delivered' },
        }),
      POLL,
    );

    await page.getByRole('navigation').getByRole('link', { name: 'Alerts' }).click();
    await page.getByRole('heading', { name: 'Alerts', exact: true }).waitFor();
    const fired = page.getByRole('row').filter({ hasText: '100 %' }).filter({ hasText: 'Grace Hopper' });
    await fired.getByText('Monthly budget of the member').waitFor();
    await fired.getByText('delivered', { exact: true }).waitFor();
    await fired.getByText('2 attempts').waitFor();
    await fired.getByText('$0.02', { exact: false }).first().waitFor();
    await fired.getByText(/Delivery log \(2\)/).click();
    await fired.getByText(/#1 .*HTTP 500/).waitFor();
    await fired.getByText(/#2 .*HTTP 204/).waitFor();
    assert.ok(received.some((r) => r.ok));
    await check('10-alerts');
  });

  it('the Alerts page shows an alert still being retried: its key, the last error and the next retry', async () => {
    // A fixture row as the ledger writer leaves an alert whose first delivery failed: next attempt in an
    // hour (so the writer leaves it alone during the test), one logged attempt without an answer.
    const spender = await stack.prisma.apiKey.findFirstOrThrow({ where: { memberId, name: 'spender' } });
    const start = new Date(Date.UTC(2031, 0, 1));
    const next = new Date(Date.now() + 3_600_000);
    await stack.prisma.alertEvent.create({
      data: {
        scope: 'key',
        memberId,
        keyId: spender.id,
        subjectId: spender.id,
        limitName: 'models.chat-A.allowance_tokens',
        unit: 'tokens',
        periodId: '2031-01',
        periodStart: start,
        periodEnd: new Date(Date.UTC(2031, 1, 1)),
        threshold: 90,
        used: 900n,
        limitValue: 1000n,
        status: 'pending',
        attempts: 1,
        nextAttemptAt: next,
        deliveries: {
          create: [
            {
              attempt: 1,
              url: 'http://127.0.0.1:9/hook',
              status: null,
              error: 'connect ECONNREFUSED 127.0.0.1:9',
              durationMs: 3,
            },
          ],
        },
      },
    });
    await page.getByLabel('Delivery').selectOption('pending');
    await page.waitForURL(/status=pending/);
    const row = page.getByRole('row').filter({ hasText: 'Token allowance on chat-A' });
    await row.getByText('retrying').waitFor();
    await row.getByText(spender.prefix).waitFor();
    await row.getByText('(spender)').waitFor();
    await row.getByText('900 tokens of 1,000 tokens').waitFor();
    await row.getByText(`next retry ${next.toISOString().slice(0, 16).replace('T', ' ')} UTC`).waitFor();
    await row.getByText('Last error: connect ECONNREFUSED 127.0.0.1:9').waitFor();
    assert.equal(await page.getByRole('row').filter({ hasText: 'Monthly budget of the member' }).count(), 0);
    await check('11-alerts-pending');
  });
});
