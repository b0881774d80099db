/**
 * The operator console in a real browser: Debian's Chromium driven by playwright-core (no browser
 * download), against a real gateway + chat-service + ledger writer and the console built from
 * source by Vite for this run. Every page is checked with axe-core (no serious or critical
 * violation) and screenshotted at 1280 px and 390 px into the folder printed at the start.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { OperatorsRepository } from '@infer/persistence';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { chromiumOptions, noChromium } from '../support/browser.js';
import {
  atPhoneWidth,
  buildConsole,
  capture as captureTo,
  signIn as consoleSignIn,
  layoutProblems,
  shotsDir,
} from '../support/console-browser.js';
import { waitFor } from '../support/wait-for.js';
import { apiError, type Stack, startStack, startStackLedger } from './harness.js';

const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const VIEWER = { email: 'viewer@example.com', password: 'viewer password 123' };
/** Polling the ledger, the index and BullMQ: up to 20 s, every 100 ms. */
const POLL = { timeoutMs: 20_000, everyMs: 100 };

describe('operator console in Chromium', {
  skip: noChromium,
}, () => {
  let stack: Stack;
  let ledger: LedgerWriter;
  let browser: Browser;
  let distDir: string;
  const shots = shotsDir('console-e2e');
  const cspErrors: string[] = [];
  const tag = Math.random().toString(16).slice(2, 10);
  const limitsPrefix = `test:ce2e:${tag}:`;

  async function newPage(width: number, ctx?: BrowserContext): Promise<Page> {
    const context = ctx ?? (await browser.newContext({ viewport: { width, height: 900 } }));
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    return page;
  }

  const signIn = (page: Page, who: { email: string; password: string }) =>
    consoleSignIn(page, stack.url, who);
  const capture = (page: Page, name: string) => captureTo(page, shots, name);

  before(async () => {
    console.log(`console screenshots: ${shots}`);
    distDir = await buildConsole();
    const env = {
      USAGE_STREAM: `USAGE_CE2E${tag.toUpperCase()}`,
      USAGE_SUBJECT_ROOT: `usage_ce2e${tag}.events`,
      CONSOLE_DIR: distDir,
      LIMITS_ENABLED: '1',
      LIMITS_REDIS_PREFIX: limitsPrefix,
      CONSOLE_REDIS_PREFIX: `${limitsPrefix}console:`,
      BULLMQ_PREFIX: `${limitsPrefix}bull`,
    };
    stack = await startStack({ env });
    ledger = await startStackLedger(stack);
    const ops = new OperatorsRepository(stack.prisma);
    await ops.create({ ...OWNER, role: 'owner' });
    await ops.create({ ...VIEWER, role: 'viewer' });
    browser = await chromium.launch(chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await ledger?.stop();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${limitsPrefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  it('serves the console with a strict CSP, an uncached index and immutable hashed assets', async () => {
    const res = await fetch(`${stack.url}/console/members?q=x`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'; script-src 'self'/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const html = await res.text();
    assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script');
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(asset);
    const js = await fetch(`${stack.url}${asset}`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('cache-control') ?? '', /immutable/);
    await js.arrayBuffer();
    const missing = await fetch(`${stack.url}/console/assets/nope.js`);
    assert.equal(missing.status, 404);
  });

  it('signs in (wrong password refused), shows every page, signs out', async () => {
    const page = await newPage(1280);
    await page.goto(`${stack.url}/console/`);
    await page.getByRole('heading', { name: 'Operator console' }).waitFor();
    await capture(page, '00-sign-in');
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill('wrong password!');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Wrong email or password.').waitFor();
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await capture(page, '01-overview');
    for (const [link, heading, shot] of [
      ['Members', 'Members', '02-members'],
      ['Models', 'Models', '04-models'],
      ['Usage', 'Usage', '05-usage'],
      ['Alerts', 'Alerts', '05-alerts'],
      ['Queues', 'Queues', '06-queues'],
      ['Search index', 'Search index', '06-search-index'],
      ['Audit log', 'Audit log', '07-audit'],
      ['Operators', 'Operators', '08-operators'],
    ] as const) {
      await page.getByRole('navigation').getByRole('link', { name: link }).click();
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await capture(page, shot);
      // Nothing wider than the screen, columns under their headings, chart text readable; at phone
      // width also no word split over two lines (wide tables may still split a word in a squeezed column).
      assert.deepEqual(await layoutProblems(page, 'main', { splitWords: false }), [], `${shot} @1280`);
      assert.deepEqual(await atPhoneWidth(page, () => layoutProblems(page, 'main')), [], `${shot} @390`);
    }
    // The session cookie is HttpOnly: page script cannot read it.
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie),
      '',
    );
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const after = await page.evaluate(async () => (await fetch('/admin/audit')).status);
    assert.ok(after === 401 || after === 404, `signed out: ${after}`);
    await page.context().close();
  });

  it('refuses a mutation without the CSRF token, even from the console origin', async () => {
    const page = await newPage(1280);
    await signIn(page, OWNER);
    const status = await page.evaluate(async () => {
      const r = await fetch('/admin/members', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'csrf', tier: 'community' }),
      });
      return { status: r.status, code: ((await r.json()) as { error: { code: string } }).error.code };
    });
    assert.deepEqual(status, { status: 403, code: 'csrf_failed' });
    await page.context().close();
  });

  it('mints a key shown once, which works on /v1/models; a limit change is enforced; revoke gives 401; traffic shows in usage', async () => {
    const page = await newPage(1280);
    await signIn(page, OWNER);
    await page.getByRole('navigation').getByRole('link', { name: 'Members' }).click();
    await page.getByRole('button', { name: 'New member' }).click();
    // The form validates with the API's contract before sending.
    await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
    await page.getByRole('dialog').getByRole('alert').first().waitFor();
    await page.getByRole('dialog').getByLabel('Name').fill('<img src=x onerror=alert(1)> Ada');
    await page.getByRole('dialog').getByLabel('Tier').selectOption('inference');
    await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: '<img src=x onerror=alert(1)> Ada' }).waitFor();
    assert.equal(await page.locator('main img').count(), 0, 'member text is rendered escaped');

    await page.getByRole('button', { name: 'Mint key' }).click();
    await page.getByRole('dialog').getByLabel('Key name').fill('e2e');
    await page.getByRole('dialog').getByRole('button', { name: 'Mint' }).click();
    const keyDialog = page.getByRole('dialog', { name: 'Your new API key' });
    await keyDialog.waitFor();
    await capture(page, '03-member-key-shown-once');
    const key = (await page.getByTestId('minted-key').textContent())?.trim() ?? '';
    assert.match(key, /^sk-inf-/);
    await page.keyboard.press('Escape');
    assert.equal(await keyDialog.isVisible(), true, 'Escape does not dismiss the one-time key');
    await keyDialog.getByRole('button', { name: 'I have stored the key' }).click();
    assert.equal(await page.getByText(key).count(), 0, 'the key is not shown again');

    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: key, maxRetries: 0 });
    assert.ok((await client.models.list()).data.length > 0);

    // The live state of the key's limits, as the gateway computes it.
    await page.getByRole('button', { name: 'State' }).click();
    const stateDialog = page.getByRole('dialog', { name: /Live limits of/ });
    await stateDialog.getByRole('cell', { name: 'key.requests_per_minute' }).waitFor();
    await capture(page, '03-member-key-limits-state');
    await stateDialog.getByRole('button', { name: 'Close' }).click();

    // Limit override through the editor (a form: a bad value is named beside its field), then enforced.
    await page.getByRole('button', { name: 'Limits' }).click();
    const editor = page.getByRole('dialog', { name: /Limits of/ });
    await editor.getByLabel('Requests per minute', { exact: true }).first().selectOption('value');
    const rpm = editor.getByRole('textbox', { name: 'Requests per minute', exact: true });
    await rpm.fill('-1');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await editor.getByText('Requests per minute must be a whole number, 0 or more.').waitFor();
    await rpm.fill('1');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('own limits').waitFor();
    const hi = [{ role: 'user' as const, content: 'hi' }];
    await client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 4 });
    assert.equal(
      (await apiError(client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 4 })))
        .status,
      429,
    );

    // The request reaches the ledger and shows in the member's chart and the usage explorer.
    await waitFor(
      'the usage row in the ledger',
      async () => {
        const rows = (await stack.prisma.$queryRawUnsafe(
          `SELECT count(*)::int AS n FROM "UsageEvent" WHERE "model" = 'chat-A'`,
        )) as Array<{ n: number }>;
        return (rows[0]?.n ?? 0) > 0;
      },
      POLL,
    );
    // The row is in the ledger (and its rollups, same statement): a reload shows it in the chart. Each
    // attempt waits for the page's own fetch to finish before looking.
    await waitFor(
      'the usage row in the member chart',
      async () => {
        await page.reload();
        return page
          .getByRole('figure', { name: 'Tokens per model per day (UTC)' })
          .getByText('chat-A')
          .first()
          .waitFor({ timeout: 5_000 })
          .then(
            () => true,
            () => false,
          );
      },
      { timeoutMs: 60_000, everyMs: 100 },
    );
    await page.getByRole('navigation').getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('figure').getByText('chat-A').first().waitFor();
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    const csv = readFileSync((await (await download).path()) ?? '', 'utf8');
    assert.match(csv, /^day,model,requests,errors/);
    // Cost beside tokens (ADR 0101): this stack's catalog has no prices, so 0. Lines end in CRLF (RFC 4180).
    assert.match(csv, /^day,model,requests,errors,prompt_tokens,completion_tokens,total_tokens,cost_usd\r\n/);
    assert.match(csv, /\d{4}-\d{2}-\d{2},chat-A,\d+,\d+,\d+,\d+,\d+,0\r\n/);
    assert.match(csv, /\d{4}-\d{2}-\d{2},chat-A,\d+/);
    await page.getByRole('navigation').getByRole('link', { name: 'Overview' }).click();
    await page
      .getByRole('figure', { name: 'Requests per model, last 24 hours' })
      .getByText('chat-A')
      .first()
      .waitFor();

    // Revoke through the confirm dialog.
    await page.goBack();
    await page.goBack();
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page
      .getByRole('dialog', { name: 'Revoke this key?' })
      .getByRole('button', { name: 'Revoke key' })
      .click();
    await page.getByText(/^revoked /).waitFor();
    assert.equal((await apiError(client.models.list())).status, 401);
    await page.context().close();
  });

  it('ingests a document into the search index and removes it', async () => {
    const page = await newPage(1280);
    await signIn(page, OWNER);
    await page.getByRole('navigation').getByRole('link', { name: 'Search index' }).click();
    await page.getByLabel('URL').fill('https://docs.example.com/console-e2e');
    await page.getByLabel('Title').fill('Console e2e document');
    await page.getByLabel('Text').fill('The operator console ingests this page for the local search engine.');
    await page.getByRole('button', { name: 'Ingest' }).click();
    await page.getByRole('cell', { name: 'Console e2e document' }).waitFor();
    const hits = await stack.prisma.searchDocument.count({
      where: { url: 'https://docs.example.com/console-e2e' },
    });
    assert.equal(hits, 1);
    await page
      .getByRole('row', { name: /Console e2e document/ })
      .getByRole('button', { name: 'Remove' })
      .click();
    await page
      .getByRole('dialog', { name: 'Remove this document?' })
      .getByRole('button', { name: 'Remove document' })
      .click();
    await waitFor(
      'the document to leave the index',
      async () =>
        (await stack.prisma.searchDocument.count({
          where: { url: 'https://docs.example.com/console-e2e' },
        })) === 0,
      POLL,
    );
    await page.getByRole('cell', { name: 'Console e2e document' }).waitFor({ state: 'detached' });
    await page.context().close();
  });

  it('shows a failed job with its error and retries it from the queues page', async () => {
    const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
      maxRetriesPerRequest: null,
    });
    const prefix = `${limitsPrefix}bull`;
    const queue = new Queue('image-jobs', { connection, prefix });
    let calls = 0;
    const worker = new Worker(
      'image-jobs',
      async () => {
        calls++;
        if (calls === 1) throw new Error('engine exploded (test)');
        return 'ok';
      },
      { connection, prefix },
    );
    try {
      const job = await queue.add('generate', { prompt: 'a fox' });
      await waitFor('the job to fail', async () => (await job.getState()) === 'failed', POLL);
      const page = await newPage(1280);
      await signIn(page, OWNER);
      await page.goto(`${stack.url}/console/queues?queue=image-jobs&state=failed`);
      // The error reads as a sentence; it is not final, so the job can be retried.
      await page.getByRole('cell', { name: 'Engine exploded (test).' }).waitFor();
      await capture(page, '06-queues-failed-job');
      await page.getByRole('button', { name: `Retry job ${job.id}` }).click();
      await waitFor('the retried job to complete', async () => (await job.getState()) === 'completed', POLL);
      assert.equal(calls, 2);
      const audit = await page.evaluate(
        async () =>
          (await (await fetch('/admin/audit?action=queue.')).json()) as {
            data: Array<{ action: string; target: { id: string } }>;
          },
      );
      assert.deepEqual(
        audit.data.map((e) => [e.action, e.target.id]),
        [['queue.retry', `image-jobs/${job.id}`]],
      );
      const unknown = await page.evaluate(async () => (await fetch('/admin/queues/nope/jobs')).status);
      assert.equal(unknown, 404);
      await page.context().close();
    } finally {
      await worker.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
    }
  });

  it('lets a viewer read but not change: controls disabled with a reason, the server refuses too', async () => {
    const page = await newPage(1280);
    await signIn(page, VIEWER);
    await page.getByRole('navigation').getByRole('link', { name: 'Members' }).click();
    const create = page.getByRole('button', { name: 'New member' });
    assert.equal(await create.isDisabled(), true);
    assert.match((await create.getAttribute('title')) ?? '', /viewer/);
    assert.equal(await page.getByRole('navigation').getByRole('link', { name: 'Operators' }).count(), 0);
    const refused = await page.evaluate(async () => {
      const s = (await (await fetch('/admin/session')).json()) as { csrf_token: string };
      const r = await fetch('/admin/members', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': s.csrf_token },
        body: JSON.stringify({ name: 'nope', tier: 'community' }),
      });
      return r.status;
    });
    assert.equal(refused, 403);
    await page.goto(`${stack.url}/console/queues`);
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    await capture(page, '09-viewer-queues');
    await page.context().close();
    assert.deepEqual(cspErrors, [], 'no Content-Security-Policy violations');
  });
});
