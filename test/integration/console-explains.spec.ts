/**
 * The console explains what happened (issue 39), in Chromium (playwright-core) against a real
 * gateway + chat-service + ledger writer and the console built by Vite for this run: a member
 * complains of 429s and the operator finds the limit from their request id in under 3 clicks; the
 * member page says why the member is refused and when the limit resets; the Logs page filters and
 * tails. Every page is checked with axe-core and the layout checker at 1440 and 390 px, and
 * screenshotted into the folder printed at the start.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RequestLogEntry } from '@infer/contracts';
import { ApiKeysRepository, MembersRepository, OperatorsRepository } from '@infer/persistence';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { type Browser, chromium, type Page } from 'playwright-core';
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
import { apiError, type Stack, startStack, startStackLedger } from './harness.js';
import { ADMIN_TOKEN, newKey, type TestKey } from './limits-support.js';

const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const hi = [{ role: 'user' as const, content: 'hi' }];
const WIDTHS = [1440, 390] as const;

describe('the console explains what happened (Chromium)', { skip: noChromium }, () => {
  let stack: Stack;
  let ledger: LedgerWriter;
  let browser: Browser;
  let distDir: string;
  let throttled: TestKey;
  let other: TestKey;
  const shots = shotsDir('console-explains');
  const tag = Math.random().toString(16).slice(2, 10);
  const prefix = `test:cexp:${tag}:`;
  const cspErrors: string[] = [];

  const admin = async <T>(path: string): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    return { status: res.status, body: (await res.json()) as T };
  };
  const logged = (requestId: string) =>
    waitFor(
      `request ${requestId} in the log`,
      async () => {
        const r = await admin<RequestLogEntry>(`/admin/logs/${encodeURIComponent(requestId)}`);
        return r.status === 200 ? r.body : null;
      },
      { timeoutMs: 30_000, everyMs: 100 },
    );

  async function newPage(width = 1440): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    await consoleSignIn(page, stack.url, OWNER);
    return page;
  }

  /** axe (no serious or critical violation), the layout checker and a screenshot at 1440 and 390 px. */
  async function check(page: Page, name: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await axe(page, `${name} @${width}`);
      assert.deepEqual(
        await layoutProblems(page, 'main', { splitWords: width < 700 }),
        [],
        `${name} @${width}`,
      );
      await page.screenshot({ path: join(shots, `${name}-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  }

  before(async () => {
    console.log(`console screenshots: ${shots}`);
    distDir = await buildConsole();
    stack = await startStack({
      env: {
        CONSOLE_DIR: distDir,
        ADMIN_TOKEN,
        LIMITS_ENABLED: '1',
        LIMITS_REDIS_PREFIX: prefix,
        CONSOLE_REDIS_PREFIX: `${prefix}console:`,
        BULLMQ_PREFIX: `${prefix}bull`,
      },
    });
    ledger = await startStackLedger(stack);
    await new OperatorsRepository(stack.prisma).create({ ...OWNER, role: 'owner' });
    throttled = await newKey(stack, 'inference', { key: { requests_per_minute: 1 } });
    other = await newKey(stack, 'inference');
    browser = await chromium.launch(chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await ledger?.stop();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  it('a member complains of 429s: the limit from their request id in under 3 clicks', async () => {
    // Mixed traffic: successes of another member, client errors, and the throttled member's refusals.
    for (let i = 0; i < 6; i++)
      await other.client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 2 });
    const bad = await apiError(
      other.client.chat.completions.create({ model: 'chat-A', messages: hi, temperature: 9 }),
    );
    assert.equal(bad.status, 400);
    // One request per minute: the second within the same minute is refused (a minute may roll over
    // between two requests, so up to 5 tries).
    let refusedId = '';
    for (let i = 0; i < 5 && !refusedId; i++) {
      const r = await throttled.client.chat.completions
        .create({ model: 'chat-A', messages: hi, max_tokens: 2 })
        .withResponse()
        .then(
          () => null,
          (e: unknown) => e as { status: number; requestID?: string | null },
        );
      if (r?.status === 429) refusedId = r.requestID ?? '';
    }
    assert.ok(refusedId, 'a 429 with its request id');
    for (let i = 0; i < 3; i++)
      assert.equal(
        (await apiError(throttled.client.chat.completions.create({ model: 'chat-A', messages: hi }))).status,
        429,
      );
    const entry = await logged(refusedId);
    assert.equal(entry.limit, 'key.requests_per_minute');

    const page = await newPage();
    let clicks = 0;
    const click = async (l: ReturnType<Page['getByRole']>) => {
      clicks++;
      await l.click();
    };
    await click(page.getByRole('navigation').getByRole('link', { name: 'Logs' }));
    await page.getByLabel('Request id').fill(refusedId);
    await click(page.getByRole('button', { name: 'Look up' }));
    const refusedBy = page.getByTestId('refused-by');
    await refusedBy.getByText('Refused by Requests per minute of the key').waitFor();
    await refusedBy.getByText('key.requests_per_minute', { exact: true }).waitFor();
    // The key's live state (its limit is 1 per minute) and when it lets requests through again.
    await refusedBy.getByText(/^Now: 1 request per minute; \d+ used now/).waitFor();
    await refusedBy.getByText(/resets within a minute|resets in \d+ s|rolls over in \d+ s/).waitFor();
    assert.ok(clicks < 3, `${clicks} clicks`);
    const detail = page.getByTestId('request-detail');
    await detail.getByText('429 rate limited').waitFor();
    await detail.getByRole('link', { name: throttled.memberId }).waitFor();
    await check(page, '01-logs-request-refused');

    // The member page: which limit, how often, when it resets.
    await refusedBy.getByRole('link', { name: 'Why this member is refused' }).click();
    const panel = page.getByTestId('refusals');
    await panel.getByRole('heading', { name: 'Why refused, last 24 hours' }).waitFor();
    await panel.getByText('(key.requests_per_minute)').waitFor();
    await panel.getByText(/^[4-9] in the last hour, [4-9] in the last day$/).waitFor();
    await panel
      .getByText(/resets|rolls over/)
      .first()
      .waitFor();
    await check(page, '02-member-why-refused');
    // Its "last" link lists those refusals in the Logs page, and nothing of another member.
    await panel.getByRole('link', { name: /ago$/ }).click();
    await page.getByRole('heading', { name: 'Logs', exact: true }).waitFor();
    await page.getByRole('cell', { name: refusedId }).waitFor();
    const members = await page
      .locator('td[data-label="Member"]')
      .evaluateAll((tds) => tds.map((td) => td.getAttribute('data-member')));
    assert.ok(members.length >= 4);
    assert.deepEqual([...new Set(members)], [throttled.memberId]);
    await page.context().close();
  });

  it('filters by status class and time range, pages, and tails live (paused while hidden)', async () => {
    const page = await newPage();
    await page.goto(`${stack.url}/console/logs`);
    await page.getByRole('heading', { name: 'Logs', exact: true }).waitFor();
    await page.getByLabel('Status').selectOption('4xx');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('cell', { name: /^400 client error$/ }).waitFor();
    const statuses = await page.locator('td[data-label="Status"]').allTextContents();
    assert.ok(statuses.length >= 5);
    for (const s of statuses) assert.match(s, /^4\d\d /);
    assert.match(page.url(), /status=4xx/);
    await check(page, '03-logs-4xx');
    // A time range that ends before any request: nothing.
    await page.getByLabel('To (UTC)').fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No request matches.').waitFor();

    // The live tail: a new request appears; a hidden tab pauses it.
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByRole('button', { name: 'Start the live tail' }).click();
    await page
      .getByRole('status')
      .getByText(/^Live: every 2 s, the newest 200 kept/)
      .waitFor();
    const { response } = await other.client.chat.completions
      .create({ model: 'chat-A', messages: hi, max_tokens: 2 })
      .withResponse();
    const id = response.headers.get('x-request-id') ?? '';
    await page.getByRole('cell', { name: id }).waitFor({ timeout: 30_000 });
    await check(page, '04-logs-live-tail');
    await page.evaluate(() => {
      const d = (globalThis as unknown as { document: { dispatchEvent(e: unknown): void } }).document;
      Object.defineProperty(d, 'visibilityState', { value: 'hidden', configurable: true });
      d.dispatchEvent(new Event('visibilitychange'));
    });
    await page.getByRole('status').getByText('Paused while the tab is hidden.').waitFor();
    await page.getByRole('button', { name: 'Stop the live tail' }).click();
    await page.getByRole('button', { name: 'Start the live tail' }).waitFor();
    await page.context().close();
  });

  it('asks before every consequential change and says what will happen; success and failure shown', async () => {
    // A premium member with 3 keys.
    const member = await new MembersRepository(stack.prisma).create({
      name: 'Grace Hopper',
      tier: 'premium',
    });
    const keys = new ApiKeysRepository(stack.prisma);
    const minted = [];
    for (const n of ['one', 'two', 'three']) minted.push((await keys.mint(member.id, n)).record);
    const tierOf = async () =>
      (await admin<{ tier: string; suspended: boolean }>(`/admin/members/${member.id}`)).body;
    const page = await newPage();
    await page.goto(`${stack.url}/console/members/${member.id}`);
    await page.getByRole('heading', { name: 'Grace Hopper' }).waitFor();

    // ArrowUp on the focused tier select changes nothing on the server.
    const select = page.getByLabel('Tier', { exact: true });
    await select.focus();
    await page.keyboard.press('ArrowUp');
    assert.notEqual(await select.inputValue(), 'premium');
    await select.selectOption('inference');
    assert.equal((await tierOf()).tier, 'premium');
    await page.getByRole('button', { name: 'Change tier' }).click();
    const tierDialog = page.getByRole('dialog', { name: 'Move Grace Hopper to the inference tier?' });
    await tierDialog
      .getByText('3 keys of this member move from the premium to the inference tier at once')
      .waitFor();
    await check(page, '06-confirm-tier');
    await tierDialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await tierOf()).tier, 'premium');
    await page.getByRole('button', { name: 'Change tier' }).click();
    await tierDialog.getByRole('button', { name: 'Move to inference' }).click();
    await page.getByRole('status').getByText('Grace Hopper is now on the inference tier.').waitFor();
    assert.equal((await tierOf()).tier, 'inference');

    // Rotate names the key and says the old secret's grace; the new secret is shown once.
    const prefix = minted[0]?.prefix ?? '';
    await page.getByRole('button', { name: `Rotate key ${prefix}` }).click();
    const rotate = page.getByRole('dialog', { name: `Rotate key ${prefix}?` });
    await rotate
      .getByText(/keeps working for the grace period below \(24\s+hours unless changed\)/)
      .waitFor();
    assert.equal(await rotate.getByLabel('Grace period of the old secret').inputValue(), '24h');
    await rotate.getByRole('button', { name: 'Rotate key' }).click();
    await page
      .getByRole('dialog', { name: 'The new secret of this key' })
      .getByRole('button', { name: 'I have stored the key' })
      .click();
    await page.getByRole('status').getByText(`Key ${prefix} rotated`).waitFor();

    // Suspend names the member and what stops.
    await page.getByRole('button', { name: 'Suspend', exact: true }).click();
    const suspend = page.getByRole('dialog', { name: 'Suspend Grace Hopper?' });
    await suspend.getByText(/\(3 active\) is refused with 401/).waitFor();
    await suspend.getByRole('button', { name: 'Suspend member' }).click();
    await page.getByRole('status').getByText('Grace Hopper is suspended.').waitFor();
    assert.equal((await tierOf()).suspended, true);
    await check(page, '07-member-after-changes');

    // Disable a model: asked, cancelled changes nothing; confirmed, disabled; enabled again.
    const models = (await admin<{ data: Array<{ id: string; enabled: boolean }> }>('/admin/models')).body
      .data;
    const model = models.find((m) => m.id !== 'chat-A' && m.enabled)?.id ?? '';
    await page.getByRole('navigation').getByRole('link', { name: 'Models' }).click();
    await page.getByRole('button', { name: `Disable ${model}` }).click();
    const disable = page.getByRole('dialog', { name: `Disable ${model}?` });
    await disable.getByText(/refused with 404 model_not_found at once/).waitFor();
    await check(page, '08-confirm-disable-model');
    await disable.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(
      (await admin<{ data: Array<{ id: string; enabled: boolean }> }>('/admin/models')).body.data.find(
        (m) => m.id === model,
      )?.enabled,
      true,
    );
    await page.getByRole('button', { name: `Disable ${model}` }).click();
    await disable.getByRole('button', { name: `Disable ${model}` }).click();
    await page.getByRole('status').getByText(`${model} is disabled.`).waitFor();
    await page.getByRole('button', { name: `Enable ${model}` }).click();
    await page
      .getByRole('dialog', { name: `Enable ${model}?` })
      .getByRole('button', { name: `Enable ${model}` })
      .click();
    await page.getByRole('status').getByText(`${model} is enabled.`).waitFor();

    // An operator's role: asked; the last owner's own demotion fails and says why, in the dialog.
    await new OperatorsRepository(stack.prisma).create({
      email: 'ada@example.com',
      password: 'ada password 1234',
      role: 'viewer',
    });
    await page.getByRole('navigation').getByRole('link', { name: 'Operators' }).click();
    await page.getByLabel('Role of ada@example.com').selectOption('admin');
    const role = page.getByRole('dialog', { name: 'Make ada@example.com an admin?' });
    await role.getByText(/An admin can change members/).waitFor();
    await role.getByRole('button', { name: 'Make admin' }).click();
    await page.getByRole('status').getByText('ada@example.com is now an admin.').waitFor();
    await page.getByLabel(`Role of ${OWNER.email}`).selectOption('viewer');
    const demote = page.getByRole('dialog', { name: `Make ${OWNER.email} a viewer?` });
    await demote.getByRole('button', { name: 'Make viewer' }).click();
    await demote
      .getByRole('alert')
      .getByText('The last active owner cannot be demoted or disabled.')
      .waitFor();
    await check(page, '09-confirm-role-failed');
    await demote.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(await page.getByLabel(`Role of ${OWNER.email}`).inputValue(), 'owner');

    // The audit log has each change, and reads at phone width too.
    await page.getByRole('navigation').getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('cell', { name: 'operator.update' }).first().waitFor();
    await check(page, '10-audit');
    await page.context().close();
  });

  it('queues: pause asks first; a job that cannot succeed says so and is not retried; attempts never exceed the maximum', async () => {
    const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
      maxRetriesPerRequest: null,
    });
    const bullPrefix = `${prefix}bull`;
    const queue = new Queue('audio-transcriptions', { connection, prefix: bullPrefix });
    let calls = 0;
    const worker = new Worker(
      'audio-transcriptions',
      async (job) => {
        calls++;
        if (job.name === 'final')
          throw new UnrecoverableError(
            `ApiError:${JSON.stringify({ status: 400, message: 'The audio file could not be decoded', type: 'invalid_request_error', param: 'file', code: 'invalid_audio' })}`,
          );
        throw new Error('engine unavailable (test)');
      },
      { connection, prefix: bullPrefix },
    );
    try {
      const final = await queue.add('final', { file: 'x.wav' }, { attempts: 2 });
      const transient = await queue.add('transient', { file: 'y.wav' }, { attempts: 2 });
      const failed = (id: string | undefined) =>
        waitFor(`job ${id} failed`, async () => (await queue.getJobState(id ?? '')) === 'failed', {
          timeoutMs: 20_000,
          everyMs: 100,
        });
      await failed(final.id);
      await failed(transient.id);
      const page = await newPage();
      await page.goto(`${stack.url}/console/queues?queue=audio-transcriptions&state=failed`);
      await page
        .getByRole('cell', { name: /The audio file could not be decoded\. cannot succeed/ })
        .waitFor();
      const retryFinal = page.getByRole('button', { name: `Retry job ${final.id}` });
      assert.equal(await retryFinal.isDisabled(), true);
      assert.match((await retryFinal.getAttribute('title')) ?? '', /would fail the same way/);
      // The server refuses it too.
      const refused = await fetch(`${stack.url}/admin/queues/audio-transcriptions/jobs/${final.id}/retry`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'job_not_retryable');
      await check(page, '11-queues-failed-jobs');

      // A transient failure retried: a fresh set of attempts, never "3 of 2".
      await page.getByRole('button', { name: `Retry job ${transient.id}` }).click();
      await page.getByRole('status').getByText(`Job ${transient.id} is queued again.`).waitFor();
      await waitFor(
        'the retried job to fail again',
        async () => calls >= 5 && (await queue.getJobState(transient.id ?? '')) === 'failed',
        { timeoutMs: 20_000, everyMs: 100 },
      );
      await page.getByLabel('Job id').fill(String(transient.id));
      await page
        .getByRole('form', { name: 'Find a job' })
        .getByLabel('Queue')
        .selectOption('audio-transcriptions');
      await page.getByRole('button', { name: 'Find job' }).click();
      await page.getByTestId('job-state').getByText('failed').waitFor();
      await page.getByText('2 of 2', { exact: true }).waitFor();

      // Pause asks first and says what it does.
      await page.getByRole('button', { name: 'Pause audio-transcriptions' }).click();
      const pause = page.getByRole('dialog', { name: 'Pause audio-transcriptions?' });
      await pause.getByText(/No worker starts a new job/).waitFor();
      await check(page, '12-confirm-pause');
      await pause.getByRole('button', { name: 'Pause queue' }).click();
      await page.getByRole('status').getByText('audio-transcriptions is paused.').waitFor();
      assert.equal(await queue.isPaused(), true);
      await check(page, '13-queues-paused');
      await page.context().close();
    } finally {
      await worker.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
    }
  });

  it('the overview says whether the platform is healthy: errors split, alert threshold, values on hover and focus', async () => {
    const page = await newPage();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page
      .getByTestId('server-errors')
      .getByText(/^\d+\.\d %/)
      .waitFor({ timeout: 30_000 });
    await page
      .getByTestId('refusals')
      .getByText(/^\d+\.\d %$/)
      .waitFor();
    await page
      .getByTestId('client-errors')
      .getByText(/^\d+\.\d %$/)
      .waitFor();
    const chart = page.getByRole('figure', { name: 'Server errors, % of requests per minute' });
    await chart.getByText('alert threshold (InferHighErrorRate)').waitFor();
    assert.equal(await chart.locator('line.chart-threshold').count(), 1);
    // Keyboard: focus the requests chart, step back a minute, read the values.
    const requests = page.getByRole('figure', { name: 'Requests per minute, last hour' });
    await requests.getByRole('img').focus();
    await page.keyboard.press('End');
    await requests
      .getByText(/^\d\d:\d\d UTC: requests \d+, server errors \d+, refusals \d+, client errors \d+$/)
      .waitFor();
    await page.keyboard.press('ArrowLeft');
    const readout = await requests.locator('.chart-readout').textContent();
    // Hover: the values of the minute under the pointer.
    const box = await chart.getByRole('img').boundingBox();
    assert.ok(box);
    await page.mouse.move(box.x + box.width - 4, box.y + box.height / 2);
    await chart.getByText(/^\d\d:\d\d UTC: 5xx % /).waitFor();
    assert.match(readout ?? '', /UTC: requests/);
    await check(page, '14-overview-health');
    await page.context().close();
  });

  it("bodies: the member page's switch logs them; the request detail shows them redacted, or says they are not logged", async () => {
    const page = await newPage();
    await page.goto(`${stack.url}/console/members/${encodeURIComponent(other.memberId)}`);
    await page.getByTestId('member-log-bodies').getByText('not logged').waitFor();
    await page.getByRole('button', { name: 'Log bodies' }).click();
    const dialog = page.getByRole('dialog', { name: /request and response bodies\?$/ });
    await dialog.getByText(/secrets redacted/).waitFor();
    await dialog.getByRole('button', { name: 'Log bodies' }).click();
    await page.getByTestId('member-log-bodies').getByText('logged', { exact: true }).waitFor();

    const secret = `sk-inf-${'Pp4Qq5Rr6S'.repeat(4)}`;
    const { response } = await other.client.chat.completions
      .create({ model: 'chat-A', messages: [{ role: 'user', content: `my key ${secret}` }], max_tokens: 2 })
      .withResponse();
    const id = response.headers.get('x-request-id') ?? '';
    await waitFor(
      'its bodies',
      async () => (await admin<{ bodies: unknown }>(`/admin/logs/${id}`)).body.bodies,
      {
        timeoutMs: 30_000,
      },
    );
    await page.goto(`${stack.url}/console/logs?request=${encodeURIComponent(id)}`);
    const bodies = page.getByTestId('request-bodies');
    await bodies.getByRole('heading', { name: 'Request body' }).waitFor();
    await bodies
      .getByRole('region', { name: 'Request body' })
      .getByText(/my key sk-\[redacted\]/)
      .waitFor();
    await bodies
      .getByRole('region', { name: 'Response body' })
      .getByText(/chat\.completion/)
      .waitFor();
    assert.ok(!(await page.content()).includes('Pp4Qq5Rr6S'));
    await check(page, '15-logs-request-bodies');

    // The throttled member's bodies are not logged: the detail says so.
    const theirs = await admin<{ data: RequestLogEntry[] }>(
      `/admin/logs?member=${throttled.memberId}&limit=1`,
    );
    await page.goto(
      `${stack.url}/console/logs?request=${encodeURIComponent(theirs.body.data[0]?.request_id ?? '')}`,
    );
    await page
      .getByTestId('request-bodies')
      .getByText(/^Bodies not logged for this member or model/)
      .waitFor();
    await page.context().close();
  });

  it('an unknown request id says so', async () => {
    const page = await newPage();
    await page.goto(`${stack.url}/console/logs?request=req_nosuchrequest`);
    await page.getByText(/No request with this id in the log/).waitFor();
    await check(page, '05-logs-unknown-id');
    await page.context().close();
    assert.deepEqual(cspErrors, []);
  });
});
