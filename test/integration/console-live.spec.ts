/**
 * The operator console's live pages in Debian's Chromium (playwright-core, no browser download)
 * against a real gateway, chat-service and ledger writer: traffic appears in the overview's latency
 * and tokens charts (streamed over Server-Sent Events under the strict CSP), service instances are
 * listed with their version, a key is minted from the Keys page and works, a queue is paused and
 * resumed and a job found by id, the member page's quota panel shows usage after a request and its
 * billing anchor is edited. Every page is checked with axe-core and screenshotted at 1280 and 390 px.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { OperatorsRepository } from '@infer/persistence';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { chromiumOptions, noChromium } from '../support/browser.js';
import {
  atPhoneWidth,
  buildConsole,
  capture,
  layoutProblems,
  shotsDir,
  signIn,
} from '../support/console-browser.js';
import { waitFor } from '../support/wait-for.js';
import { type LiveStack, type Stack, startLiveStack } from './harness.js';

const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const VIEWER = { email: 'viewer@example.com', password: 'viewer password 123' };
const hi = [{ role: 'user' as const, content: 'hi' }];

describe('operator console live pages in Chromium', { skip: noChromium }, () => {
  let live: LiveStack;
  let stack: Stack;
  let prefix: string;
  let browser: Browser;
  let distDir: string;
  let shots: string;
  const cspErrors: string[] = [];
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    return page;
  }

  before(async () => {
    shots = shotsDir('console-live');
    console.log(`console screenshots: ${shots}`);
    distDir = await buildConsole();
    live = await startLiveStack('clv', '7.7.7-e2e', { CONSOLE_DIR: distDir });
    ({ stack, prefix } = live);
    const ops = new OperatorsRepository(stack.prisma);
    await ops.create({ ...OWNER, role: 'owner' });
    await ops.create({ ...VIEWER, role: 'viewer' });
    browser = await chromium.launch(chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await live?.close();
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  it('overview: traffic shows in the latency and tokens charts live; instances listed with their version', async () => {
    const page = await newPage();
    await signIn(page, stack.url, OWNER);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    // The stream is open before the traffic: what follows arrives over SSE, without a reload.
    await page.getByText(/^live, updated/).waitFor();
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: stack.keys.premium, maxRetries: 0 });
    for (let i = 0; i < 3; i++)
      await client.chat.completions.create({ model: 'chat-B', messages: hi, max_tokens: 4 });
    for (const title of [
      'Tokens per minute per model, last hour',
      'p50 latency per model (ms), last hour',
      'p99 latency per model (ms), last hour',
    ]) {
      // The chart's legend and its screen-reader table name the model once traffic arrived.
      await page
        .getByRole('figure', { name: title })
        .getByRole('cell', { name: 'chat-B' })
        .waitFor({ timeout: 20_000 });
    }
    const svgLines = await page
      .getByRole('figure', { name: 'Tokens per minute per model, last hour' })
      .locator('polyline, circle')
      .count();
    assert.ok(svgLines > 0, 'the tokens chart draws the series');
    // The 24-hour chart includes the current hour's requests, from the same live counters, without a
    // reload (the rollup it read once at page load had none of them), marked as the hour so far.
    const day = page.getByRole('figure', { name: 'Requests per model, last 24 hours' });
    const dayRow = day.getByRole('row', { name: /chat-B/ });
    await dayRow.waitFor({ timeout: 20_000 });
    await day.getByText(/^the current hour so far \(since \d\d:00 UTC\)$/).waitFor();
    const [, total, current] = (await dayRow.getByRole('cell').allTextContents()).map(Number);
    assert.ok((current ?? 0) >= 3 && (total ?? 0) >= (current ?? 0), `24 h row: ${total}, ${current}`);
    const row = page.getByRole('row', { name: /chat-B/ }).first();
    await row.waitFor();
    const instances = page.getByRole('table', { name: 'Service instances and their state' });
    for (const service of ['gateway', 'chat-service', 'ledger-writer'])
      await instances
        .getByRole('row', { name: new RegExp(`^${service} .*7\\.7\\.7-e2e`) })
        .first()
        .waitFor();
    await page
      .getByTestId('ledger-lag')
      .getByText(/messages$/)
      .waitFor();
    await capture(page, shots, '01-overview-live');
    // At phone width: nothing wider than the screen (the charts' hidden tables included), tables as
    // cards without split words, chart text at a readable size.
    assert.deepEqual(await atPhoneWidth(page, () => layoutProblems(page, 'main')), []);
    await page.context().close();
  });

  it('Keys page: finds keys across members, mints for a member (shown once) and the key works', async () => {
    const page = await newPage();
    await signIn(page, stack.url, OWNER);
    await page.getByRole('navigation').getByRole('link', { name: 'Keys' }).click();
    await page.getByRole('heading', { name: 'Keys', exact: true }).waitFor();
    await page.getByRole('cell', { name: 'it-community' }).first().waitFor();
    await capture(page, shots, '02-keys');
    // At phone width the table stacks into one card per key: nothing overflows, no word is split.
    assert.deepEqual(await atPhoneWidth(page, () => layoutProblems(page, 'main table')), []);
    await page.getByLabel('Search key name, prefix, member').fill('it-inference');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL(/q=it-inference/);
    await page.getByRole('cell', { name: 'it-community' }).first().waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Mint key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Mint an API key' });
    // The form refuses to mint without a member, before asking the server.
    await dialog.getByRole('button', { name: 'Mint' }).click();
    await dialog.getByText('Choose a member.').waitFor();
    await dialog.getByLabel('Find member (name, email or id)').fill('it-inference');
    await dialog.getByRole('button', { name: 'Find' }).click();
    await dialog.getByText(/1 member\(s\) match/).waitFor();
    await dialog.getByLabel('Member', { exact: true }).selectOption({ label: 'it-inference (inference)' });
    await dialog.getByLabel('Key name').fill('from-keys-page');
    await dialog.getByRole('button', { name: 'Mint' }).click();
    const shown = page.getByRole('dialog', { name: 'Your new API key' });
    await shown.waitFor();
    await capture(page, shots, '02-keys-minted-once');
    const key = (await page.getByTestId('minted-key').textContent())?.trim() ?? '';
    assert.match(key, /^sk-inf-/);
    await shown.getByRole('button', { name: 'I have stored the key' }).click();
    await page.getByRole('cell', { name: 'from-keys-page' }).waitFor();
    assert.equal(await page.getByText(key).count(), 0, 'the key is not shown again');
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: key, maxRetries: 0 });
    assert.ok((await client.models.list()).data.length > 0);

    // Live limit state of the new key from the list.
    const prefixText = key.slice(0, 13);
    await page.getByRole('button', { name: `State of ${prefixText}` }).click();
    await page
      .getByRole('dialog', { name: /Live limits of/ })
      .getByRole('cell', { name: 'key.requests_per_minute' })
      .waitFor();
    await page
      .getByRole('dialog', { name: /Live limits of/ })
      .getByRole('button', { name: 'Close' })
      .click();
    await page.context().close();
  });

  it("member page: the quota panel shows a request's tokens; the billing anchor is edited with the contract", async () => {
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: stack.keys.community, maxRetries: 0 });
    const done = await client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 4 });
    const tokens = done.usage?.total_tokens ?? 0;
    assert.ok(tokens > 0);
    const member = await stack.prisma.member.findFirstOrThrow({ where: { name: 'it-community' } });
    const page = await newPage();
    await signIn(page, stack.url, OWNER);
    await page.goto(`${stack.url}/console/members/${member.id}`);
    const quotas = page.getByRole('table', { name: 'Quotas of this member' });
    const row = quotas.getByRole('row', { name: /chat-A allowance/ });
    await waitFor(
      'the chat-A allowance to show the request',
      async () => {
        const text = (await row.textContent()) ?? '';
        const used = Number(/([\d,]+) tokens/.exec(text)?.[1]?.replace(/,/g, '') ?? '0');
        return used >= tokens;
      },
      { timeoutMs: 20_000, everyMs: 250 },
    );
    await quotas
      .getByRole('row', { name: /Web searches per day/ })
      .first()
      .waitFor();
    await capture(page, shots, '03-member-quotas');
    // Keys, quotas and batches as cards at phone width (the facts list above them is not checked: the
    // member's 36-character id cannot fit beside its label and breaks at a hyphen).
    assert.deepEqual(await atPhoneWidth(page, () => layoutProblems(page, 'main table')), []);

    const anchor = page.getByLabel('Billing anchor (UTC date)');
    await anchor.fill('2026-02-03');
    await page.getByRole('button', { name: 'Save anchor' }).click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    await waitFor('the anchor in the database', async () => {
      const m = await stack.prisma.member.findUniqueOrThrow({ where: { id: member.id } });
      return m.billingPeriodAnchor.toISOString().startsWith('2026-02-03');
    });
    await page.context().close();
  });

  it('queues: pause and resume a queue, find a job by id; a viewer sees the controls disabled', async () => {
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('image-jobs', { connection, prefix: `${prefix}bull` });
    try {
      const job = await queue.add('generate', { prompt: 'a red fox', n: 1 });
      const page = await newPage();
      await signIn(page, stack.url, OWNER);
      await page.getByRole('navigation').getByRole('link', { name: 'Queues' }).click();
      await page.getByRole('button', { name: 'Pause image-jobs' }).click();
      await page
        .getByRole('dialog', { name: 'Pause image-jobs?' })
        .getByRole('button', { name: 'Pause queue' })
        .click();
      await page.getByRole('button', { name: 'Resume image-jobs' }).waitFor();
      assert.equal(await queue.isPaused(), true);
      await page.getByLabel('Job id').fill(String(job.id));
      await page.getByRole('form', { name: 'Find a job' }).getByLabel('Queue').selectOption('image-jobs');
      await page.getByRole('button', { name: 'Find job' }).click();
      await page.getByTestId('job-state').getByText('waiting').waitFor();
      await page.getByText('"a red fox"').waitFor();
      await capture(page, shots, '04-queues-paused-job-found');
      // At phone width: queue names, the paused / no workers badges and the Resume button on one line
      // each, nothing wider than the screen, the bar chart's text at a readable size.
      await page.getByText('no workers').waitFor();
      assert.deepEqual(
        await atPhoneWidth(page, () => layoutProblems(page, 'main table, main figure.chart')),
        [],
      );
      await page.getByRole('button', { name: 'Resume image-jobs' }).click();
      await page
        .getByRole('dialog', { name: 'Resume image-jobs?' })
        .getByRole('button', { name: 'Resume queue' })
        .click();
      await page.getByRole('button', { name: 'Pause image-jobs' }).waitFor();
      assert.equal(await queue.isPaused(), false);
      const audit = await page.evaluate(
        async () =>
          (await (await fetch('/admin/audit?action=queue.')).json()) as { data: Array<{ action: string }> },
      );
      assert.deepEqual(
        audit.data.map((e) => e.action),
        ['queue.resume', 'queue.pause'],
      );
      await page.context().close();

      const viewer = await newPage();
      await signIn(viewer, stack.url, VIEWER);
      await viewer.getByRole('navigation').getByRole('link', { name: 'Queues' }).click();
      const pause = viewer.getByRole('button', { name: 'Pause image-jobs' });
      assert.equal(await pause.isDisabled(), true);
      assert.match((await pause.getAttribute('title')) ?? '', /viewer/);
      const refused = await viewer.evaluate(async () => {
        const s = (await (await fetch('/admin/session')).json()) as { csrf_token: string };
        return (
          await fetch('/admin/queues/image-jobs/pause', {
            method: 'POST',
            headers: { 'x-csrf-token': s.csrf_token },
          })
        ).status;
      });
      assert.equal(refused, 403);
      await viewer.getByRole('navigation').getByRole('link', { name: 'Keys' }).click();
      await viewer.getByRole('heading', { name: 'Keys', exact: true }).waitFor();
      assert.equal(await viewer.getByRole('button', { name: 'Mint key' }).isDisabled(), true);
      await capture(viewer, shots, '05-viewer-keys');
      await viewer.context().close();
      assert.deepEqual(cspErrors, [], 'no Content-Security-Policy violations');
    } finally {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
    }
  });

  it('Keys page pager: Next shows the following page, Previous the first one again (cursors in the URL)', async () => {
    const member = await stack.prisma.member.findFirstOrThrow({ where: { name: 'it-community' } });
    const page = await newPage();
    await signIn(page, stack.url, OWNER);
    // 26 keys named pager-NN: one page of 25 and one of 1.
    const made = await page.evaluate(async (memberId) => {
      const s = (await (await fetch('/admin/session')).json()) as { csrf_token: string };
      let ok = 0;
      for (let i = 1; i <= 26; i++) {
        const r = await fetch(`/admin/members/${memberId}/keys`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': s.csrf_token },
          body: JSON.stringify({ name: `pager-${String(i).padStart(2, '0')}` }),
        });
        if (r.status === 201 || r.status === 200) ok++;
      }
      return ok;
    }, member.id);
    assert.equal(made, 26);
    await page.goto(`${stack.url}/console/keys?q=pager-`);
    const names = page.locator('main table tbody tr td:nth-child(2)');
    const previous = page.getByRole('button', { name: 'Previous' });
    const next = page.getByRole('button', { name: 'Next' });
    const rowsWhen = async (what: string, count: number) => {
      await waitFor(what, async () => (await names.count()) === count, { timeoutMs: 10_000, everyMs: 50 });
      return names.allTextContents();
    };
    const first = await rowsWhen('the first page', 25);
    assert.equal(await previous.isDisabled(), true);
    await next.click();
    await page.waitForURL(/after=/, { timeout: 10_000 });
    const second = await rowsWhen('the second page', 1);
    assert.equal(await next.isDisabled(), true);
    assert.equal(await previous.isDisabled(), false);
    const all = [...first, ...second].sort();
    assert.deepEqual(
      all,
      Array.from({ length: 26 }, (_, i) => `pager-${String(i + 1).padStart(2, '0')}`),
      'the two pages hold every key once',
    );
    await previous.click();
    await page.waitForURL((u) => !u.searchParams.has('after'), { timeout: 10_000 });
    assert.deepEqual(await rowsWhen('the first page again', 25), first);
    // The browser's Back returns to the second page (the page is in the URL).
    await page.goBack();
    assert.deepEqual(await rowsWhen('the second page again', 1), second);
    await page.context().close();
  });
});
