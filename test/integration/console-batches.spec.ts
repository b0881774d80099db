/**
 * The member page's Batches section in Debian's Chromium (playwright-core) against a real gateway,
 * chat-service and batch runner: a new member's key uploads a JSONL file and creates two batches
 * through the official `openai` SDK; the member page lists them and, without a reload (it polls while
 * a batch runs), shows them `completed` with their counts. The admin route's pages (`after` /
 * `next_after`) are checked too. axe-core and screenshots at 1280 and 390 px.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ApiKeysRepository, MembersRepository, OperatorsRepository } from '@infer/persistence';
import OpenAI, { toFile } from 'openai';
import { type Browser, chromium } from 'playwright-core';
import { type RunningBatchRunner, startBatchRunner } from '../../apps/gateway/src/batch/runner/app.js';
import { chromiumOptions, noChromium } from '../support/browser.js';
import { buildConsole, capture, shotsDir, signIn } from '../support/console-browser.js';
import { waitFor } from '../support/wait-for.js';
import { batchCatalog, batchDirs, chatLine, jsonl, runnerEnv } from './batch-support.js';
import { type Stack, startStack } from './harness.js';
import { ADMIN_TOKEN } from './limits-support.js';

const OWNER = { email: 'owner@example.com', password: 'owner password 123' };

describe('operator console: a member’s batches in Chromium', { skip: noChromium }, () => {
  let stack: Stack;
  let runner: RunningBatchRunner;
  let browser: Browser;
  let distDir: string;
  const dirs = batchDirs();

  before(async () => {
    distDir = await buildConsole();
    stack = await startStack({
      catalogFile: batchCatalog(dirs.dir),
      env: {
        BULLMQ_PREFIX: `tcbatch${randomBytes(4).toString('hex')}`,
        FILE_STORE: 'fs',
        FILE_STORE_DIR: dirs.files,
        CONSOLE_DIR: distDir,
        ADMIN_TOKEN,
      },
    });
    runner = await startBatchRunner({ env: runnerEnv(stack, { BATCH_MODEL_CONCURRENCY: '1' }) });
    await new OperatorsRepository(stack.prisma).create({ ...OWNER, role: 'owner' });
    browser = await chromium.launch(chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await runner?.stop();
    await stack?.close();
    rmSync(dirs.dir, { recursive: true, force: true });
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  it('lists the batches, follows them to completed with their counts, and pages', async () => {
    const member = await new MembersRepository(stack.prisma).create({
      name: 'batch-owner',
      tier: 'inference',
    });
    const key = (await new ApiKeysRepository(stack.prisma).mint(member.id, 'batch-key')).key;
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: key, maxRetries: 0 });
    // chat-slow answers after 150 ms and the runner takes one line at a time: the first batch runs
    // for about 4 s, so the page opens while it runs.
    const ids = Array.from({ length: 24 }, (_, i) => `line-${i}`);
    const input = jsonl(ids.map((id) => chatLine(id, 'chat-slow')));
    // Signed in first, so that the member page opens while the first batch runs.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await signIn(page, stack.url, OWNER);
    const file = await client.files.create({
      file: await toFile(Buffer.from(input), 'input.jsonl'),
      purpose: 'batch',
    });
    const create = () =>
      client.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
    const first = await create();

    await page.goto(`${stack.url}/console/members/${member.id}`);
    const table = page.getByRole('table', { name: 'Batches of this member, newest first' });
    const row = table.getByRole('row', { name: new RegExp(first.id) });
    await row.waitFor();
    // The batch is still running when the page shows it: the page says it keeps it up to date...
    await page.getByText(/^updating every/).waitFor({ timeout: 10_000 });
    assert.doesNotMatch((await row.textContent()) ?? '', /completed/);
    // ...and follows it to the end without a reload.
    await waitFor(
      'the first batch to show completed with its counts, without a reload',
      async () => /completed.*24 done, 0 failed of 24/.test((await row.textContent()) ?? ''),
      { timeoutMs: 30_000, everyMs: 200 },
    );
    const bar = page.getByRole('progressbar', { name: `Progress of batch ${first.id}` });
    assert.equal(await bar.getAttribute('value'), '24');
    assert.equal(await bar.getAttribute('max'), '24');
    const done = await client.batches.retrieve(first.id);
    assert.equal(done.status, 'completed');
    assert.ok(done.output_file_id);
    assert.match((await row.textContent()) ?? '', new RegExp(done.output_file_id));
    // Nothing runs any more: the page stops polling and says so.
    await page.getByText(/^updating every/).waitFor({ state: 'detached' });

    // A second batch created while the page is open and idle shows after a reload, newest first.
    const second = await create();
    await waitFor(
      'the second batch to finish',
      async () => (await client.batches.retrieve(second.id)).status === 'completed',
      { timeoutMs: 30_000, everyMs: 200 },
    );
    await page.reload();
    await table.getByRole('row', { name: new RegExp(second.id) }).waitFor();
    const shown = await table.locator('tbody tr td:first-child').allTextContents();
    assert.deepEqual(shown, [second.id, first.id]);
    const dir = shotsDir('console-batches');
    console.log(`console screenshots: ${dir}`);
    await capture(page, dir, '01-member-batches');
    await context.close();

    // The admin route pages: limit=1 gives the newest and a cursor to the next, which is the last.
    const get = async (q: string) => {
      const r = await fetch(`${stack.url}/admin/members/${member.id}/batches${q}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      return {
        status: r.status,
        body: (await r.json()) as Record<string, unknown> & { data?: { id: string }[] },
      };
    };
    const p1 = await get('?limit=1');
    assert.deepEqual(
      p1.body.data?.map((b) => b.id),
      [second.id],
    );
    assert.equal(p1.body.next_after, second.id);
    const p2 = await get(`?limit=1&after=${second.id}`);
    assert.deepEqual(
      p2.body.data?.map((b) => b.id),
      [first.id],
    );
    assert.equal(p2.body.next_after, null);
    const bad = await get('?after=batch_nope');
    assert.equal(bad.status, 400);
    assert.equal((bad.body.error as { param?: string }).param, 'after');
  });
});
