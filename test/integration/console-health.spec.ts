/**
 * The console says whether the platform is healthy (issue 39), in Chromium (playwright-core), against
 * a stack this test starts: gateway, chat, embedding, audio (api and worker), image (api and worker)
 * and search services, ledger writer and batch runner, all on the test's own NATS subjects and Redis
 * prefixes, with tracing on (OTLP to an in-process receiver) and a stand-in trace viewer:
 * - the overview shows PostgreSQL, Redis and NATS and every instance up, and says "healthy";
 * - an instance the test started (the embedding service) is stopped: the overview shows it down, and
 *   why the platform is no longer healthy;
 * - requests to its model then fail with 5xx: the shipped rule InferHighErrorRate fires (the console's
 *   own evaluation; CONSOLE_ALERTS_FOR_S=0 so as not to wait its 10 minutes) and is listed;
 * - an instance whose readiness check fails shows degraded, and InferEngineNotReady fires;
 * - a request's log row links to its trace in the trace viewer, and the viewer's link (a trace id)
 *   leads back to the request in the Logs page; the Logs lookup takes a trace id too;
 * - a replica with ALERTMANAGER_URL lists a stand-in Alertmanager's alerts, and says when it cannot.
 * Every page is checked with axe-core and the layout checker at 1440 and 390 px and screenshotted
 * into the folder printed at the start.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Overview, RequestLogEntry } from '@infer/contracts';
import { OperatorsRepository } from '@infer/persistence';
import { type RunningService, startMicroservice } from '@infer/runtime';
import { Module } from '@nestjs/common';
import { type Browser, chromium, type Page } from 'playwright-core';
import { startAudioService } from '../../apps/audio-service/src/app.js';
import { type EmbeddingService, startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { startGateway } from '../../apps/gateway/src/app.js';
import { type RunningBatchRunner, startBatchRunner } from '../../apps/gateway/src/batch/runner/app.js';
import { startImageService } from '../../apps/image-service/src/app.js';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { startSearchService } from '../../apps/search-service/src/app.js';
import { chromiumOptions, noChromium } from '../support/browser.js';
import {
  axe,
  buildConsole,
  signIn as consoleSignIn,
  layoutProblems,
  shotsDir,
} from '../support/console-browser.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { startTraceViewer, type TraceViewer } from '../support/trace-viewer.js';
import { waitFor } from '../support/wait-for.js';
import { runnerEnv } from './batch-support.js';
import { type Stack, startStack, startStackLedger } from './harness.js';
import { ADMIN_TOKEN } from './limits-support.js';

@Module({})
class ProbeModule {}

const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const WIDTHS = [1440, 390] as const;
/** Every role this test starts, as the overview names them. */
const SERVICES = [
  'audio-service',
  'batch-runner',
  'chat-service',
  'embedding-service',
  'gateway',
  'image-service',
  'ledger-writer',
  'search-service',
];

describe('the console says whether the platform is healthy (Chromium)', { skip: noChromium }, () => {
  let stack: Stack;
  let ledger: LedgerWriter;
  let runner: RunningBatchRunner;
  let embedding: EmbeddingService;
  let probe: RunningService | undefined;
  let otlp: OtlpReceiver;
  let viewer: TraceViewer;
  let browser: Browser;
  let distDir: string;
  const shots = shotsDir('console-health');
  const cspErrors: string[] = [];

  const overview = async (): Promise<Overview> => {
    const res = await fetch(`${stack.url}/admin/overview?minutes=10`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 200);
    return (await res.json()) as Overview;
  };

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
    otlp = await startOtlpReceiver();
    viewer = await startTraceViewer(otlp);
    stack = await startStack({
      env: {
        CONSOLE_DIR: distDir,
        ADMIN_TOKEN,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        TRACE_URL_TEMPLATE: `${viewer.url}/trace/{trace_id}`,
        // The rules' `for` (5 to 10 minutes) capped: an alert fires at the first evaluation that holds.
        CONSOLE_ALERTS_FOR_S: '0',
      },
      services: [
        async (env) => {
          embedding = await startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX });
          return embedding;
        },
        (env) => startAudioService({ env, role: 'all', subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
        (env) => startImageService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
        (env) =>
          startSearchService({
            env,
            subjectPrefix: env.SEARCH_SUBJECT_PREFIX,
            embeddingSubjectPrefix: env.MODEL_SUBJECT_PREFIX,
          }),
      ],
    });
    viewer.consoleUrl = stack.url;
    ledger = await startStackLedger(stack);
    runner = await startBatchRunner({ env: runnerEnv(stack) });
    await new OperatorsRepository(stack.prisma).create({ ...OWNER, role: 'owner' });
    browser = await chromium.launch(chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await probe?.stop();
    await runner?.stop();
    await ledger?.stop();
    await stack?.close();
    await viewer?.close();
    await otlp?.close();
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  it('the overview shows every backing server and every instance up: the platform is healthy', async () => {
    const o = await waitFor(
      'every role up and ready',
      async () => {
        const o = await overview();
        const up = new Set(o.instances.filter((i) => i.state === 'up').map((i) => i.service));
        return SERVICES.every((s) => up.has(s)) && o.health.status === 'healthy' ? o : null;
      },
      { timeoutMs: 30_000, everyMs: 250 },
    );
    assert.deepEqual(
      o.backing.map((b) => [b.name, b.up]),
      [
        ['postgresql', true],
        ['redis', true],
        ['nats', true],
      ],
    );
    assert.deepEqual(o.alerts.source, 'console');
    assert.deepEqual(o.alerts.active, []);
    const page = await newPage();
    const health = page.getByTestId('health');
    await health.getByRole('heading', { name: 'The platform is healthy' }).waitFor();
    for (const name of ['PostgreSQL', 'Redis', 'NATS'])
      await page
        .getByTestId(`backing-${name === 'PostgreSQL' ? 'postgresql' : name.toLowerCase()}`)
        .getByRole('heading', { name: `${name} up` })
        .waitFor();
    const rows = page.getByTestId('instances').locator('tbody tr');
    await waitFor('every service in the table', async () => {
      const services = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-service')));
      return SERVICES.every((s) => services.includes(s));
    });
    const states = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-state')));
    assert.deepEqual([...new Set(states)], ['up']);
    await page.getByTestId('no-alerts').waitFor();
    await check(page, '01-overview-healthy');
    await page.context().close();
  });

  it('a log row links to its trace, and the trace leads back to the request in the Logs page', async () => {
    const client = stack.client('premium');
    const { response } = await client.chat.completions
      .create({ model: 'chat-A', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
      .withResponse();
    const requestId = response.headers.get('x-request-id') ?? '';
    const traceId = response.headers.get('x-trace-id') ?? '';
    assert.match(traceId, /^[0-9a-f]{32}$/);
    const entry = await waitFor(
      `request ${requestId} in the log`,
      async () => {
        const r = await fetch(`${stack.url}/admin/logs/${requestId}`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        return r.status === 200 ? ((await r.json()) as RequestLogEntry) : null;
      },
      { timeoutMs: 30_000, everyMs: 100 },
    );
    assert.equal(entry.trace_id, traceId);
    assert.equal(entry.trace_url, `${viewer.url}/trace/${traceId}`);

    const page = await newPage();
    await page.getByRole('navigation').getByRole('link', { name: 'Logs' }).click();
    // The row in the list links to the trace; so does the request's detail.
    const rowTrace = page
      .getByRole('row')
      .filter({ hasText: requestId })
      .getByRole('link', { name: 'trace' });
    assert.equal(await rowTrace.getAttribute('href'), entry.trace_url);
    await page.getByLabel('Request id or trace id').fill(requestId);
    await page.getByRole('button', { name: 'Look up' }).click();
    const detail = page.getByTestId('request-detail');
    await detail.getByText(traceId).waitFor();
    const link = detail.getByRole('link', { name: `Trace of ${requestId} (opens the trace viewer)` });
    assert.equal(await link.getAttribute('href'), entry.trace_url);
    assert.equal(await link.getAttribute('target'), '_blank');
    await check(page, '02-logs-request-with-trace');
    // Followed: the viewer (a new tab) shows the trace's spans, and links back by trace id.
    const [tab] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
    await tab.getByRole('heading', { name: `Trace ${traceId}` }).waitFor();
    // (Every app of this test runs in one process: its spans all carry the first app's service name.)
    await waitFor('the gateway span in the viewer', async () => {
      await tab.reload();
      return (await tab.getByText(/: POST \/v1\/chat\/completions$/).count()) > 0;
    });
    await tab.getByRole('link', { name: 'Logs of this trace' }).click();
    await tab.getByTestId('trace-filter').getByText(traceId).waitFor();
    await tab.getByRole('cell', { name: requestId }).waitFor();
    assert.equal(await tab.locator('td[data-label="Request"]').count(), 1);
    // The lookup takes a trace id as well.
    await page.getByRole('button', { name: 'Close' }).click();
    await page.getByLabel('Request id or trace id').fill(traceId.toUpperCase());
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByTestId('trace-filter').getByText(traceId).waitFor();
    await page.getByRole('cell', { name: requestId }).waitFor();
    assert.match(page.url(), new RegExp(`trace_id=${traceId}`));
    await check(page, '03-logs-of-a-trace');
    // Not a trace id: the API says which parameter.
    const bad = await fetch(`${stack.url}/admin/logs?trace_id=xyz`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'trace_id');
    await page.context().close();
  });

  it('an instance whose readiness check fails shows degraded with the failing check; InferEngineNotReady fires', async () => {
    // A service started by this test on the stack's subjects with one readiness check of its own (the
    // real StatusPublisher and readiness machinery; the check is what the test turns off and on).
    let engineReady = true;
    probe = await startMicroservice({
      name: 'probe-service',
      queue: 'probe-service',
      module: ProbeModule,
      env: { ...stack.gatewayEnv, LOG_LEVEL: 'silent' },
      subjectPrefix: stack.gatewayEnv.MODEL_SUBJECT_PREFIX,
      checks: () => [{ name: 'engines', check: () => engineReady }],
    });
    const page = await newPage();
    const row = page.getByTestId('instances').locator('tr[data-service="probe-service"]');
    await row.getByText('up', { exact: true }).waitFor({ timeout: 30_000 });
    engineReady = false;
    await row.getByText('degraded', { exact: true }).waitFor({ timeout: 30_000 });
    await row.getByText(/not ready: engines failing, since \d\d:\d\d:\d\d UTC/).waitFor();
    await page.getByText('probe-service: 0 up, 1 degraded', { exact: true }).waitFor();
    const health = page.getByTestId('health');
    await health.getByRole('heading', { name: 'The platform is degraded' }).waitFor();
    await health
      .getByText(/^probe-service instance \S+ is degraded \(not ready: engines failing\)\.$/)
      .waitFor();
    const alert = page.getByTestId('alerts').getByRole('row').filter({ hasText: 'InferEngineNotReady' });
    await alert.getByText('probe-service: readiness check engines fails.').waitFor({ timeout: 30_000 });
    await alert.getByText('firing', { exact: true }).waitFor();
    await check(page, '04-overview-instance-degraded');
    // Ready again: up, the alert resolved, healthy.
    engineReady = true;
    await row.getByText('up', { exact: true }).waitFor({ timeout: 30_000 });
    await health.getByRole('heading', { name: 'The platform is healthy' }).waitFor({ timeout: 30_000 });
    await page.getByTestId('no-alerts').waitFor();
    await page.context().close();
  });

  it('an instance stopped shows down; errors on its model fire InferHighErrorRate, listed with severity and since', async () => {
    const page = await newPage();
    const rowOf = (service: string) => page.getByTestId('instances').locator(`tr[data-service="${service}"]`);
    await rowOf('embedding-service').getByText('up', { exact: true }).waitFor();
    await embedding.stop();
    const down = rowOf('embedding-service');
    await down.getByText('down', { exact: true }).waitFor({ timeout: 30_000 });
    await down.getByText(/stopped: it shut down cleanly, since \d\d:\d\d:\d\d UTC/).waitFor();
    const health = page.getByTestId('health');
    await health.getByRole('heading', { name: 'The platform is down' }).waitFor();
    await health.getByText('No embedding-service instance is up.').waitFor();
    await check(page, '05-overview-instance-down');

    // Requests to its model now fail (5xx): more than 5 % of the last 5 minutes.
    const client = stack.client('premium');
    let failed = 0;
    for (let i = 0; i < 4; i++) {
      const status = await client.embeddings.create({ model: 'embed-model', input: 'hello' }).then(
        () => 200,
        (e: { status?: number }) => e.status ?? 0,
      );
      if (status >= 500) failed++;
    }
    assert.equal(failed, 4);
    const alerts = page.getByTestId('alerts');
    const row = alerts.getByRole('row').filter({ hasText: 'InferHighErrorRate' });
    await row.waitFor({ timeout: 30_000 });
    await row.getByText('critical', { exact: true }).waitFor();
    await row.getByText('firing', { exact: true }).waitFor();
    await row.getByText('More than 5% of gateway answers are 5xx.').waitFor();
    await row.getByText(/^\d\d:\d\d:\d\d UTC \(\d+ s ago\)$/).waitFor();
    await health
      .getByText(/^InferHighErrorRate is firing: More than 5% of gateway answers are 5xx\.$/)
      .waitFor();
    const o = await overview();
    const firing = o.alerts.active.find((a) => a.alert === 'InferHighErrorRate');
    assert.equal(firing?.state, 'firing');
    assert.ok((firing?.value ?? 0) > 0.05);
    // The same threshold drawn on the chart of the same figure.
    const chart = page.getByRole('figure', { name: 'Server errors, % of requests per minute' });
    await chart.getByText('alert threshold (InferHighErrorRate)').waitFor();
    await check(page, '06-overview-alert-firing');
    await page.context().close();
    assert.deepEqual(cspErrors, []);
  });

  it("with ALERTMANAGER_URL the overview lists Alertmanager's active alerts; unreachable, it says so and shows its own", async () => {
    // A stand-in Alertmanager (test double of its GET /api/v2/alerts), and a second gateway replica
    // of this stack configured with it.
    let up = true;
    const am = createServer((req, res) => {
      if (!up || !req.url?.startsWith('/api/v2/alerts?active=true&silenced=false&inhibited=false')) {
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify([
          {
            labels: { alertname: 'InferLedgerLag', severity: 'critical' },
            annotations: { summary: 'The ledger writer is more than 10,000 usage events behind.' },
            startsAt: new Date(Date.now() - 120_000).toISOString(),
            status: { state: 'active' },
          },
        ]),
      );
    });
    await new Promise<void>((r) => am.listen(0, '127.0.0.1', r));
    const replica = await startGateway({
      ...stack.gatewayEnv,
      ALERTMANAGER_URL: `http://127.0.0.1:${(am.address() as AddressInfo).port}`,
    });
    try {
      const get = async () => {
        const res = await fetch(`${replica.url}/admin/overview?minutes=5`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        return ((await res.json()) as Overview).alerts;
      };
      const a = await get();
      assert.equal(a.source, 'alertmanager');
      assert.deepEqual(a.not_evaluated, []);
      assert.deepEqual(
        a.active.map((x) => [x.alert, x.severity, x.state, x.summary]),
        [
          [
            'InferLedgerLag',
            'critical',
            'firing',
            'The ledger writer is more than 10,000 usage events behind.',
          ],
        ],
      );
      up = false;
      // The reader keeps an answer 10 s: wait for the next read to fail.
      const failed = await waitFor(
        'the console to notice Alertmanager is down',
        async () => {
          const x = await get();
          return x.source === 'console' ? x : null;
        },
        { timeoutMs: 30_000, everyMs: 500 },
      );
      assert.match(failed.error ?? '', /^Alertmanager could not be read \(Alertmanager answered 503\)/);
      assert.ok(failed.not_evaluated.includes('InferHighLatency'));
    } finally {
      await replica.close();
      await new Promise<void>((r) => am.close(() => r()));
    }
  });
});
