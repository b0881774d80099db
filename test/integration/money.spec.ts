// Prices, cost, budgets and alerts on the real stack (docs/adr/0101-money.md): three gateway replicas
// sharing one Redis and one database, a ledger writer that stores each request's cost and delivers
// alerts to a webhook receiver this test runs (it checks the HMAC signature and fails each alert's first
// delivery, so every alert is retried once).
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AdminAlertListSchema, formatMoney, SelfUsageSchema } from '@infer/contracts';
import { usageTotal } from '@infer/persistence';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { parse, stringify } from 'yaml';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { type Stack, startStack, startStackLedger } from './harness.js';
import { ADMIN_TOKEN, countBy, newKey, rawChat } from './limits-support.js';

/** Long enough that every request of a burst is admitted or refused before the first admitted one ends. */
const SLOW_TTFT_MS = 3000;
const SECRET = 'test-alert-secret-0123456789abcdef';

/** config/models.yaml with prices on chat-E and chat-F, and chat-F slow (a simulator: a test double). */
function pricedCatalog(): string {
  const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as {
    models: Array<Record<string, unknown>>;
  };
  for (const m of catalog.models) {
    if (m.id === 'chat-E') m.pricing = { input_per_million: '2', output_per_million: '8.5' };
    if (m.id === 'chat-F') {
      // $0.001 per token in and out: a request of a few tokens costs about a cent.
      m.pricing = { input_per_million: 1000, output_per_million: '1000' };
      m.engine = { type: 'simulator', ttft_ms: SLOW_TTFT_MS, itl_ms: 0, default_output_tokens: 4 };
    }
  }
  const file = join(mkdtempSync(join(tmpdir(), 'infer-money-')), 'catalog.yaml');
  writeFileSync(file, stringify(catalog));
  return file;
}

interface Received {
  id: string;
  threshold: number;
  limit: string;
  ok: boolean;
}

describe('prices, cost, budgets and alerts', () => {
  let stack: Stack;
  let second: RunningGateway;
  let third: RunningGateway;
  let ledger: LedgerWriter;
  let receiver: Server;
  const received: Received[] = [];
  const badSignatures: string[] = [];
  const prefix = `money:${Math.random().toString(36).slice(2)}:`;

  before(async () => {
    // The webhook receiver: checks the signature, refuses each alert's first delivery (500) and
    // accepts the retry.
    const seen = new Set<string>();
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const sig = String(req.headers['x-infer-signature'] ?? '');
        const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig);
        const want = m ? createHmac('sha256', SECRET).update(`${m[1]}.${body}`).digest('hex') : '';
        if (!m || want !== m[2] || Math.abs(Date.now() / 1000 - Number(m[1])) > 300) {
          badSignatures.push(sig);
          res.writeHead(401).end();
          return;
        }
        const a = JSON.parse(body) as { id: string; threshold_percent: number; limit: string };
        const first = !seen.has(a.id);
        seen.add(a.id);
        received.push({ id: a.id, threshold: a.threshold_percent, limit: a.limit, ok: !first });
        res.writeHead(first ? 500 : 204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const env = {
      ADMIN_TOKEN,
      LIMITS_ENABLED: '1',
      LIMITS_REDIS_PREFIX: prefix,
      MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
    };
    stack = await startStack({ catalogFile: pricedCatalog(), env });
    const replicaEnv = { ...stack.gatewayEnv };
    second = await startGateway(replicaEnv);
    third = await startGateway(replicaEnv);
    ledger = await startStackLedger(stack, {
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/infer`,
      ALERT_WEBHOOK_SECRET: SECRET,
      ALERT_POLL_MS: '100',
      ALERT_BACKOFF_MS: '200',
    });
  });
  after(async () => {
    await second?.close();
    await third?.close();
    await ledger?.stop();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
    await new Promise((r) => receiver?.close(r));
  });

  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${stack.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field in the assertions
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  /** Polls `f` until it returns a value `ok` accepts, or fails after `ms`. */
  const until = async <T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (ok(v)) return v;
      if (Date.now() > deadline) assert.fail(`not reached in ${ms} ms: ${JSON.stringify(v, bigints)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const bigints = (_k: string, v: unknown) => (typeof v === 'bigint' ? String(v) : v);

  it('stores each request cost at the prices of its time; reports show cost beside tokens, with names', async () => {
    const k = await newKey(stack, 'inference');
    const res = await k.client.chat.completions.create({
      model: 'chat-E',
      messages: [{ role: 'user', content: 'what does it cost?' }],
      max_tokens: 7,
    });
    const u = res.usage!;
    // $2 per million input tokens, $8.5 per million output tokens, in nano-dollars.
    const expected = u.prompt_tokens * 2_000 + u.completion_tokens * 8_500;
    const rows = await until(
      () => stack.prisma.usageEvent.findMany({ where: { keyId: k.keyId } }),
      (r) => r.length === 1,
    );
    assert.equal(rows[0]!.cost, BigInt(expected));
    // A price change later never rewrites what was stored.
    await stack.prisma.model.update({
      where: { id: 'chat-E' },
      data: { pricing: { input_per_million: '1000' } },
    });
    const report = await admin('GET', `/admin/usage?member=${k.memberId}&group_by=member,key,model,day`);
    assert.equal(report.status, 200);
    assert.equal(report.body.currency, 'usd');
    const row = report.body.rows[0];
    assert.equal(row.cost, formatMoney(expected));
    assert.equal(row.member_name, 'limits-inference');
    assert.equal(row.key_name, 'limits-test');
    assert.equal(row.day, new Date().toISOString().slice(0, 10));
    assert.equal(row.total_tokens, u.total_tokens);
    assert.equal(report.body.totals.cost, formatMoney(expected));
    // The console's daily rollups carry the same cost.
    const daily = await admin('GET', `/admin/usage/daily?member=${k.memberId}&group_by=key`);
    assert.equal(daily.status, 200);
    assert.equal(daily.body.data[0].cost, formatMoney(expected));
    assert.equal(daily.body.data[0].key_name, 'limits-test');
  });

  it('a member budget reached by 3 replicas at once: overshoot at most one request, 402 budget_exceeded with its reset, alerts once per threshold', async () => {
    const k = await newKey(stack, 'inference', { key: { requests_per_minute: null, concurrent: null } });
    const budget = '0.1';
    const set = await admin('PUT', `/admin/members/${k.memberId}/limits`, {
      limits: { budget: { member_per_month: budget } },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.limits, { budget: { member_per_month: budget } });
    const bases = [stack.baseURL, `${second.url}/v1`, `${third.url}/v1`];
    const body = { model: 'chat-F', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => rawChat(bases[i % 3]!, k.key, body)),
    );
    assert.ok(Date.now() - started >= SLOW_TTFT_MS);
    const counts = countBy(results, (r) => r.status);
    assert.deepEqual(Object.keys(counts).sort(), ['200', '402'], JSON.stringify(counts));
    const refusal = results.find((r) => r.status === 402)!;
    const err = JSON.parse(refusal.body).error;
    assert.equal(err.code, 'budget_exceeded');
    assert.match(
      err.message,
      /monthly budget of this member \(\$0\.1\).*starts again at \d{4}-\d\d-01T00:00:00Z/,
    );
    assert.equal(refusal.headers.get('x-budget-limit'), budget);
    assert.match(refusal.headers.get('x-budget-reset') ?? '', /^\d+h\d+m\d+s$|^\d+m\d+s$|^\d+s$/);
    // Every admitted request reaches the ledger with its cost; together they stay within the budget
    // plus at most one request's cost.
    const admitted = counts[200]!;
    const events = await until(
      () => stack.prisma.usageEvent.findMany({ where: { memberId: k.memberId } }),
      (r) => r.length === admitted,
    );
    const costs = events.map((e) => Number(e.cost));
    const spent = costs.reduce((a, b) => a + b, 0);
    const limit = 100_000_000; // $0.1 in nano-dollars
    assert.ok(spent <= limit + Math.max(...costs), `spent ${spent} of ${limit}`);
    assert.ok(spent >= limit - 2 * Math.max(...costs), `the budget was used: ${spent} of ${limit}`);
    // The ledger's sum is what a lost Redis counter is rebuilt from.
    const now = new Date();
    const rebuilt = await usageTotal(
      {
        query: async (text, values) => ({
          rows: await stack.prisma.$queryRawUnsafe(text, ...(values ?? [])),
        }),
      },
      {
        unit: 'cost',
        memberId: k.memberId,
        from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
        to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
      },
    );
    assert.equal(rebuilt, spent);
    // GET /v1/usage, through the SDK with the key itself: the same cost and the budget among its limits.
    const own = SelfUsageSchema.parse(
      await new OpenAI({ baseURL: `${third.url}/v1`, apiKey: k.key, maxRetries: 0 }).get('/usage'),
    );
    assert.equal(own.currency, 'usd');
    assert.equal(own.member.usage.cost, formatMoney(spent));
    assert.equal(own.key?.usage.cost, formatMoney(spent));
    assert.deepEqual([...new Set(own.daily.map((d) => d.model))], ['chat-F']);
    const ownBudget = own.limits.find((l) => l.name === 'member.budget_per_month');
    assert.deepEqual([ownBudget?.limit, ownBudget?.used, ownBudget?.unit], [limit, spent, 'nano_usd']);
    // Past the burst, by the SDK on another replica: a request that does not fit what is left is refused
    // or, like any last request admitted (docs/api-decisions.md, output reservation), passes the budget
    // once; then the budget is spent and the next request is refused.
    const sdk = new OpenAI({ baseURL: `${third.url}/v1`, apiKey: k.key, maxRetries: 0 });
    const refused = (e: unknown) =>
      e instanceof OpenAI.APIError && e.status === 402 && e.code === 'budget_exceeded';
    const big = await sdk.chat.completions.create({ ...body, max_tokens: 1000 } as never).then(
      () => 'admitted',
      (e: unknown) => (refused(e) ? 'refused' : e),
    );
    if (big === 'admitted') {
      const next = await sdk.chat.completions.create(body as never).catch((e: unknown) => e);
      assert.ok(refused(next), String(next));
    } else assert.equal(big, 'refused');

    // Alerts: 80, 90 and 100 % of the member's budget, each recorded once, delivered once (after one
    // refused attempt, retried), with every attempt in the delivery log.
    const alerts = await until(
      () =>
        stack.prisma.alertEvent.findMany({
          where: { memberId: k.memberId },
          orderBy: { threshold: 'asc' },
          include: { deliveries: { orderBy: { attempt: 'asc' } } },
        }),
      (a) => a.length === 3 && a.every((x) => x.status === 'delivered'),
    );
    assert.deepEqual(
      alerts.map((a) => [a.limitName, a.threshold, a.deliveries.map((d) => d.status)]),
      [
        ['member.budget_per_month', 80, [500, 204]],
        ['member.budget_per_month', 90, [500, 204]],
        ['member.budget_per_month', 100, [500, 204]],
      ],
    );
    const mine = received.filter((r) => alerts.some((a) => `alert_${a.id}` === r.id));
    assert.deepEqual(
      countBy(
        mine.filter((r) => r.ok),
        (r) => r.threshold,
      ),
      { 80: 1, 90: 1, 100: 1 },
    );
    assert.deepEqual(badSignatures, []);
    // The console reads the same alerts and their delivery log.
    const listed = await admin('GET', `/admin/alerts?member=${k.memberId}`);
    assert.equal(listed.status, 200);
    const member = await stack.prisma.member.findUniqueOrThrow({ where: { id: k.memberId } });
    const rowsListed = AdminAlertListSchema.parse(listed.body)
      .data.map(
        (a) =>
          [
            a.threshold_percent,
            a.unit,
            a.limit_value,
            a.member_name,
            a.status,
            a.next_retry_at,
            a.last_error,
            a.deliveries.map((d) => d.status),
          ] as const,
      )
      .sort((x, y) => x[0] - y[0]);
    assert.deepEqual(rowsListed, [
      [80, 'usd', budget, member.name, 'delivered', null, null, [500, 204]],
      [90, 'usd', budget, member.name, 'delivered', null, null, [500, 204]],
      [100, 'usd', budget, member.name, 'delivered', null, null, [500, 204]],
    ]);
    const bad = await admin('GET', '/admin/alerts?status=nope');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'status');
  });

  it('a key budget refuses that key only; a key may not set its member budget', async () => {
    const k = await newKey(stack, 'inference');
    const bad = await admin('PUT', `/admin/keys/${k.keyId}/limits`, {
      limits: { budget: { member_per_month: '5' } },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'limits.budget.member_per_month');
    const set = await admin('PUT', `/admin/keys/${k.keyId}/limits`, {
      limits: { budget: { key_per_month: '0.000001' } },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const body = { model: 'chat-E', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 };
    const first = await rawChat(stack.baseURL, k.key, body);
    assert.equal(first.status, 402, first.body);
    assert.equal(JSON.parse(first.body).error.code, 'budget_exceeded');
    assert.match(JSON.parse(first.body).error.message, /this API key/);
    // The budget state is in the key's limits view, in nano-dollars.
    const state = await admin('GET', `/admin/keys/${k.keyId}/limits`);
    const b = state.body.limits.find((l: { name: string }) => l.name === 'key.budget_per_month');
    assert.deepEqual(
      [b.unit, b.limit, b.window, b.status, b.code],
      ['nano_usd', 1000, 'month', 402, 'budget_exceeded'],
    );
  });
});
