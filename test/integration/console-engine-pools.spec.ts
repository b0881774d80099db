/**
 * The console's Models page shows each model's engine endpoints (issue 35), in Chromium
 * (playwright-core), against a stack this test starts whose catalog has a chat model on two vLLM
 * SIMULATOR endpoints (libs/engine-pool/src/testing/vllm-simulator.ts, a test double speaking vLLM's
 * HTTP API). One simulator is stopped and requests are sent: the gateway's GET /admin/models/pools
 * (the chat-service replicas' `engine-pools` documents, asked over the stack's NATS subjects) and the
 * page show both endpoints, the stopped one cooling with its last error; the running one shows the
 * prefix-cache hit rate the chat-service's pool read from its /metrics (the requests share a system
 * prompt), the stopped one "not reported". Checked with axe-core and the layout checker at 1440 and
 * 390 px and screenshotted into the folder printed at the start.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ModelPools } from '@infer/contracts';
import { VllmSimulator } from '@infer/engine-pool/testing';
import { OperatorsRepository } from '@infer/persistence';
import { type Browser, chromium } from 'playwright-core';
import { chromiumOptions, noChromium } from '../support/browser.js';
import { axe, buildConsole, layoutProblems, shotsDir, signIn } from '../support/console-browser.js';
import { waitFor } from '../support/wait-for.js';
import { type Stack, startStack } from './harness.js';
import { ADMIN_TOKEN } from './limits-support.js';

const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const MODEL = 'pooled-chat';
/** A system prompt of several 16-token blocks: every request after an engine's first hits its cache. */
const SYSTEM = 'You are a careful assistant; answer briefly and name your sources. '.repeat(7);
/** As the Models page writes a share. */
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

describe("the console's Models page shows each model's engine endpoints (Chromium)", {
  skip: noChromium,
}, () => {
  let stack: Stack;
  let browser: Browser;
  let dir: string;
  let distDir: string;
  const shots = shotsDir('console-engine-pools');
  const good = new VllmSimulator({ name: 'good', timeScale: 0.2 });
  const bad = new VllmSimulator({ name: 'bad', timeScale: 0.2 });

  const pools = async (): Promise<ModelPools> => {
    const res = await fetch(`${stack.url}/admin/models/pools`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 200);
    return (await res.json()) as ModelPools;
  };

  before(async () => {
    console.log(`console screenshots: ${shots}`);
    await Promise.all([good.start(), bad.start()]);
    dir = mkdtempSync(join(tmpdir(), 'console-pools-'));
    const catalogFile = join(dir, 'models.json');
    writeFileSync(
      catalogFile,
      JSON.stringify({
        models: [
          {
            id: MODEL,
            kind: 'chat',
            rank: 10,
            tiers: ['community', 'inference', 'premium'],
            context_window: 32768,
            capabilities: { streaming: true },
            engine: {
              type: 'openai',
              health_path: '/health',
              probe_interval_ms: 100,
              routing: 'round_robin',
              retries: 1,
              endpoints: [{ url: good.url }, { url: bad.url }],
            },
          },
        ],
      }),
    );
    distDir = await buildConsole();
    stack = await startStack({ catalogFile, env: { CONSOLE_DIR: distDir, ADMIN_TOKEN } });
    await new OperatorsRepository(stack.prisma).create({ ...OWNER, role: 'owner' });
    browser = await chromium.launch(chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await stack?.close();
    await Promise.all([good.kill(), bad.kill()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (distDir) rmSync(distDir, { recursive: true, force: true });
  });

  it('lists both endpoints; a stopped one is cooling with its last error, on the API and the page', async () => {
    const client = stack.client('inference');
    const ask = (i: number) =>
      client.chat.completions.create({
        model: MODEL,
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: `hello ${i}` },
        ],
        max_tokens: 4,
      });
    for (let i = 0; i < 4; i++) await ask(i);
    const healthy = await waitFor('both endpoints up in the pools document', async () => {
      const p = (await pools()).data.find((m) => m.model === MODEL);
      return p?.endpoints.length === 2 && p.endpoints.every((e) => e.state === 'up') ? p : undefined;
    });
    // The stack's one chat-service (its process also runs the gateway: one document, counted once).
    assert.equal((await pools()).replicas, 1);
    assert.deepEqual(healthy.endpoints.map((e) => e.url).sort(), [bad.url, good.url].sort());
    assert.ok(healthy.endpoints.every((e) => e.requests >= 1 && e.capacity > 0 && e.last_error === null));

    await bad.kill();
    // Round robin sends some of these to the stopped endpoint: each fails there, is retried on the other.
    for (let i = 0; i < 4; i++) await ask(i);
    const cooled = await waitFor('the stopped endpoint cooling', async () => {
      const p = (await pools()).data.find((m) => m.model === MODEL);
      const e = p?.endpoints.find((x) => x.url === bad.url);
      return e?.state === 'cooling' && e.last_error ? p : undefined;
    });
    const down = cooled.endpoints.find((e) => e.url === bad.url);
    const up = cooled.endpoints.find((e) => e.url === good.url);
    assert.ok(down && up);
    assert.match(down.last_error ?? '', /connect|probe|ECONNREFUSED|fetch failed/i);
    assert.ok(down.errors >= 1 && down.consecutive_failures >= 1 && down.cooldown_until !== null);
    assert.ok(down.last_error_at !== null);
    assert.equal(up.state, 'up');

    // The running simulator's prefix-cache hit rate as the pool reads it from its /metrics: its own
    // ratio (over the window; once the window holds no more traffic, the lifetime one, which is the same).
    const expected = good.stats.hitTokens / good.stats.promptTokens;
    assert.ok(expected > 0, 'the shared system prompt was served from the cache');
    const reported = await waitFor(
      "the simulator's hit rate in the pools document",
      async () => {
        const p = (await pools()).data.find((m) => m.model === MODEL);
        const e = p?.endpoints.find((x) => x.url === good.url);
        const gone = p?.endpoints.find((x) => x.url === bad.url);
        const idle = e?.requests_waiting === 0 && e.requests_running === 0;
        return e?.cache_hit_rate === expected && idle && gone?.metrics_at === null ? e : undefined;
      },
      { timeoutMs: 30_000, everyMs: 200 },
    );
    assert.ok(reported.metrics_at !== null);
    assert.ok(reported.kv_cache_usage !== null && reported.kv_cache_usage > 0);

    const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await signIn(page, stack.url, OWNER);
    await page.getByRole('link', { name: 'Models' }).click();
    const table = page.getByTestId(`pool-${MODEL}`);
    const badRow = table.getByRole('row').filter({ hasText: bad.url });
    const goodRow = table.getByRole('row').filter({ hasText: good.url });
    await badRow.getByText('cooling', { exact: true }).waitFor();
    // Its last error (a failed request or probe: the text changes while it stays down) and its age.
    await badRow.getByText(/(connect|probe).*\(\d+ (s|min) ago\)$/).waitFor();
    await goodRow.getByText('up', { exact: true }).waitFor();
    await goodRow.getByText(pct(expected), { exact: true }).waitFor();
    await goodRow.getByText(/^KV \d+\.\d %, 0 waiting$/).waitFor();
    await badRow.getByText('not reported', { exact: true }).waitFor();
    for (const width of [1440, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await axe(page, `models @${width}`);
      assert.deepEqual(
        await layoutProblems(page, 'main', { splitWords: width < 700 }),
        [],
        `models @${width}`,
      );
      await page.screenshot({ path: join(shots, `models-${width}.png`), fullPage: true });
    }
    await page.context().close();
  });
});
