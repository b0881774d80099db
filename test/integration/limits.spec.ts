// Every limit of the spec through the gateway and the official openai SDK: status, code, type and
// headers; period roll-overs with the gateway's injectable clock; rebuild from the ledger; /admin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AdminUsageReportSchema, KeyLimitsStateSchema } from '@infer/contracts';
import { UsageRepository } from '@infer/persistence';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import { estimatePromptTokens } from '../../apps/gateway/src/limits/estimate.js';
import { runAdminCli } from '../support/processes.js';
import { apiError, type Stack, startStack } from './harness.js';
import { ADMIN_TOKEN, newKey, TestClock, writeCatalog, writeLimitsFile } from './limits-support.js';

const hi = [{ role: 'user' as const, content: 'hi' }];

describe('limits through the gateway (openai SDK)', () => {
  let stack: Stack;
  let clock: TestClock;
  let redis: Redis;
  const prefix = `limit:${Math.random().toString(36).slice(2)}:`;

  before(async () => {
    const catalogFile = writeCatalog({ 'chat-F': { itl_ms: 40, default_output_tokens: 400 } });
    const limitsFile = writeLimitsFile({ lease_ttl_ms: 2000 });
    stack = await startStack({
      catalogFile,
      env: {
        LIMITS_ENABLED: '1',
        LIMITS_FILE: limitsFile,
        LIMITS_REDIS_PREFIX: prefix,
        ADMIN_TOKEN,
        // NATS subjects of this run only: other test runs on this machine do not serve our requests.
        MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
      },
    });
    // Mid-minute, so that nothing rolls over unless a test moves the clock.
    clock = new TestClock(Date.UTC(2031, 4, 10, 12, 0, 30));
    clock.install(stack.gateway);
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  });
  after(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
  });

  it('requests per minute: x-ratelimit headers on each response, then 429 rate_limit_exceeded with Retry-After', async () => {
    const k = await newKey(stack, 'inference', { key: { requests_per_minute: 3 } });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { response } = await k.client.chat.completions
        .create({ model: 'chat-A', messages: hi, max_tokens: 2 })
        .withResponse();
      assert.equal(response.headers.get('x-ratelimit-limit-requests'), '3');
      assert.equal(response.headers.get('x-ratelimit-reset-requests'), '30s');
      assert.equal(response.headers.get('x-ratelimit-limit-tokens'), '1500000');
      assert.match(response.headers.get('x-ratelimit-remaining-tokens') ?? '', /^\d+$/);
      assert.match(response.headers.get('x-ratelimit-reset-tokens') ?? '', /^\d+s$/);
      remaining.push(response.headers.get('x-ratelimit-remaining-requests') ?? '');
    }
    assert.deepEqual(remaining, ['2', '1', '0']);
    const err = await apiError(k.client.chat.completions.create({ model: 'chat-A', messages: hi }));
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.equal(err.type, 'rate_limit_error');
    assert.equal(err.param, null);
    assert.equal(err.headers?.get('retry-after'), '30');
    assert.equal(err.headers?.get('x-ratelimit-remaining-requests'), '0');
    // The minute rolls over.
    clock.now += 30_000;
    const ok = await k.client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 2 });
    assert.equal(ok.object, 'chat.completion');
    clock.now -= 30_000;
  });

  it('validation and model errors come before the limits and take nothing', async () => {
    const k = await newKey(stack, 'inference', { key: { requests_per_minute: 1 } });
    await apiError(k.client.chat.completions.create({ model: 'chat-A', messages: [] }));
    await apiError(k.client.chat.completions.create({ model: 'nope', messages: hi }));
    await k.client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 1 });
  });

  it('concurrency: 429 while the slots are taken; a cancelled stream frees its slot', async () => {
    const k = await newKey(stack, 'inference', { key: { concurrent: 2 } });
    const open = async () => {
      const ac = new AbortController();
      const { data: stream, response } = await k.client.chat.completions
        .create({ model: 'chat-F', messages: hi, stream: true }, { signal: ac.signal })
        .withResponse();
      const it = stream[Symbol.asyncIterator]();
      await it.next();
      return { ac, it, response };
    };
    const s1 = await open();
    const s2 = await open();
    // SSE responses carry the headers too (written with the stream's head).
    assert.equal(s1.response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(s1.response.headers.get('x-ratelimit-limit-requests'), '60');
    assert.equal(s2.response.headers.get('x-ratelimit-remaining-requests'), '58');
    const err = await apiError(k.client.chat.completions.create({ model: 'chat-A', messages: hi }));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.equal(err.headers?.get('retry-after'), '1');
    assert.match(err.message, /concurrent/);
    assert.equal(err.headers?.get('x-ratelimit-limit-concurrent-requests'), '2');
    assert.equal(err.headers?.get('x-ratelimit-remaining-concurrent-requests'), '0');
    // The client goes away mid-stream: the slot is released when the gateway sees the disconnect.
    s1.ac.abort();
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        await k.client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 1 });
        break;
      } catch (e) {
        if (!(e instanceof OpenAI.RateLimitError) || Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    s2.ac.abort();
  });

  it('tokens per minute: a prompt that cannot fit is refused up front; real usage is charged at the end', async () => {
    const k = await newKey(stack, 'inference', { models: { 'chat-A': { tokens_per_minute: 300 } } });
    const big = [{ role: 'user' as const, content: 'word '.repeat(300) }];
    assert.ok(estimatePromptTokens({ messages: big }) > 300);
    const err = await apiError(k.client.chat.completions.create({ model: 'chat-A', messages: big }));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.match(err.message, /prompt alone/);
    assert.equal(err.headers?.get('x-ratelimit-limit-tokens'), '300');
    const { data, response } = await k.client.chat.completions
      .create({ model: 'chat-A', messages: hi, max_tokens: 200 })
      .withResponse();
    const estimate = estimatePromptTokens({ messages: hi });
    // Admission reserves the prompt and the output it may produce (here its max_tokens: this replica has
    // not yet learned the model's typical output), so the per-minute overshoot stays within one output.
    assert.equal(response.headers.get('x-ratelimit-remaining-tokens'), String(300 - estimate - 200));
    const used = data.usage!.total_tokens;
    assert.ok(used > 200);
    // The next request sees the real usage, not the estimate.
    const next = await apiError(
      k.client.chat.completions.create({
        model: 'chat-A',
        messages: [{ role: 'user', content: 'x'.repeat(400) }],
      }),
    );
    assert.equal(next.headers?.get('x-ratelimit-remaining-tokens'), String(300 - used));
    assert.equal(next.headers?.get('retry-after'), '30');
  });

  it('monthly allowance: 402 monthly_cap_reached without Retry-After, until the calendar month turns', async () => {
    const k = await newKey(stack, 'inference', { models: { 'chat-C': { allowance_tokens: 60 } } });
    const first = await k.client.chat.completions.create({ model: 'chat-C', messages: hi, max_tokens: 60 });
    assert.ok(first.usage!.total_tokens > 60);
    const err = await apiError(k.client.chat.completions.create({ model: 'chat-C', messages: hi }));
    assert.equal(err.status, 402);
    assert.equal(err.code, 'monthly_cap_reached');
    assert.equal(err.type, 'insufficient_quota');
    assert.equal(err.headers?.get('retry-after'), null);
    assert.match(err.message, /2031-06-01T00:00:00Z/);
    // Another model of the same member is not affected.
    await k.client.chat.completions.create({ model: 'chat-D', messages: hi, max_tokens: 1 });
    const saved = clock.now;
    clock.now = Date.UTC(2031, 5, 1, 0, 0, 5);
    await k.client.chat.completions.create({ model: 'chat-C', messages: hi, max_tokens: 1 });
    clock.now = saved;
  });

  it('chat-G: 429 insufficient_quota on the rolling 4-hour budget, 402 on the billing period', async () => {
    const rolling = await newKey(stack, 'premium', {
      models: { 'chat-G': { rolling_tokens: { tokens: 100, window_minutes: 240 } } },
    });
    const first = await rolling.client.chat.completions.create({
      model: 'chat-G',
      messages: hi,
      max_tokens: 100,
    });
    assert.ok(first.usage!.total_tokens > 100);
    const err = await apiError(rolling.client.chat.completions.create({ model: 'chat-G', messages: hi }));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'insufficient_quota');
    assert.equal(err.type, 'insufficient_quota');
    // Counted in one-minute buckets: the use at 12:00:30 drops out of the window at 16:00:00.
    assert.equal(err.headers?.get('retry-after'), String(4 * 3600 - 30));
    // No per-minute rate on chat-G: its headers report the token budget only.
    assert.equal(err.headers?.get('x-ratelimit-limit-requests'), null);

    const anchor = new Date(Date.UTC(2030, 0, 20, 8, 0, 0));
    const billing = await newKey(
      stack,
      'premium',
      { models: { 'chat-G': { allowance_tokens: 50 } } },
      { billingPeriodAnchor: anchor },
    );
    await billing.client.chat.completions.create({ model: 'chat-G', messages: hi, max_tokens: 60 });
    const cap = await apiError(billing.client.chat.completions.create({ model: 'chat-G', messages: hi }));
    assert.equal(cap.status, 402);
    assert.equal(cap.code, 'monthly_cap_reached');
    assert.match(cap.message, /2031-05-20T08:00:00Z/, 'the next start of the member’s billing period');
    const saved = clock.now;
    clock.now = Date.UTC(2031, 4, 20, 8, 0, 0);
    await billing.client.chat.completions.create({ model: 'chat-G', messages: hi, max_tokens: 1 });
    clock.now = saved;
  });

  it('images: 429 quota_exceeded for the month, 429 rate_limit_exceeded per minute (refused before any work)', async () => {
    const month = await newKey(stack, 'inference', { images: { requests_per_month: 0 } });
    const q = await apiError(month.client.images.generate({ model: 'image-model', prompt: 'a cat', n: 4 }));
    assert.ok(q instanceof OpenAI.RateLimitError);
    assert.equal(q.code, 'quota_exceeded');
    assert.equal(q.type, 'insufficient_quota');
    // May 10 12:00:30 -> June 1 00:00:00 UTC.
    assert.equal(q.headers?.get('retry-after'), String((Date.UTC(2031, 5, 1) - clock.now) / 1000));
    const rate = await newKey(stack, 'inference', { images: { requests_per_minute: 0 } });
    const r = await apiError(rate.client.images.generate({ model: 'image-model', prompt: 'a cat' }));
    assert.equal(r.status, 429);
    assert.equal(r.code, 'rate_limit_exceeded');
    assert.equal(r.type, 'rate_limit_error');
    assert.equal(r.headers?.get('retry-after'), '30');
    assert.equal(r.headers?.get('x-ratelimit-limit-requests'), '0');
  });

  it('quota counters lost by Redis are rebuilt from the ledger', async () => {
    const k = await newKey(stack, 'inference', { models: { 'chat-C': { allowance_tokens: 1000 } } });
    // 990 tokens of chat-C this month are in the ledger; Redis has never seen this member.
    await new UsageRepository(stack.prisma).insertBatch([
      {
        requestId: `req_rebuild_${k.keyId}`,
        memberId: k.memberId,
        keyId: k.keyId,
        model: 'chat-C',
        endpoint: '/v1/chat/completions',
        promptTokens: 900,
        completionTokens: 90,
        totalTokens: 990,
        status: 200,
        latencyMs: 5,
        at: clock.now - 86_400_000,
      },
    ]);
    const err = await apiError(
      k.client.chat.completions.create({
        model: 'chat-C',
        messages: [{ role: 'user', content: 'x'.repeat(80) }],
      }),
    );
    assert.equal(err.status, 402);
    // Redis loses its data: still refused, rebuilt again.
    const lost = await redis.keys(`${prefix}{${k.memberId}}:m:*`);
    assert.ok(lost.length >= 1);
    await redis.del(...lost);
    const again = await apiError(
      k.client.chat.completions.create({
        model: 'chat-C',
        messages: [{ role: 'user', content: 'x'.repeat(80) }],
      }),
    );
    assert.equal(again.status, 402);
  });

  it('counts refusals and rebuilds in /metrics', async () => {
    const text = (await (await fetch(`${stack.url}/metrics`)).text())
      .split('\n')
      .filter((l) => l.startsWith('gateway_limits_'))
      .join('\n');
    assert.match(text, /gateway_limits_refusals_total\{limit="key.requests_per_minute",status="429"\} [1-9]/);
    assert.match(text, /gateway_limits_refusals_total\{limit="models.allowance_tokens",status="402"\} [1-9]/);
    assert.match(text, /gateway_limits_counter_rebuilds_total\{limit="models.allowance_tokens"\} [1-9]/);
    assert.match(text, /gateway_limits_held_admissions \d+/);
  });

  describe('/admin', () => {
    let bare: RunningGateway;
    before(async () => {
      // A second gateway on the same database without ADMIN_TOKEN: its admin routes do not exist.
      bare = await startGateway({
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        HOST: '127.0.0.1',
        PORT: '0',
        ALLOW_INSECURE_HTTP: '1',
        LOG_LEVEL: 'silent',
        ADMIN_TOKEN: undefined,
      });
    });
    after(async () => {
      await bare?.close();
    });
    const admin = (path: string, token: string | null = ADMIN_TOKEN, base = stack.url) =>
      fetch(`${base}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });

    it('needs the admin token: an API key, a wrong token or none is 401; off (404) without ADMIN_TOKEN', async () => {
      for (const token of [null, stack.keys.premium, 'x'.repeat(ADMIN_TOKEN.length), `${ADMIN_TOKEN}x`]) {
        const res = await admin('/admin/usage', token);
        assert.equal(res.status, 401, `token ${token?.slice(0, 8)}`);
        const body = (await res.json()) as { error: { code: string; type: string } };
        assert.equal(body.error.code, 'invalid_admin_token');
      }
      const off = await admin('/admin/usage', ADMIN_TOKEN, bare.url);
      assert.equal(off.status, 404);
      assert.equal(((await off.json()) as { error: { code: string } }).error.code, 'unknown_url');
    });

    it('shows the current state of each limit of a key', async () => {
      const k = await newKey(stack, 'premium', { key: { requests_per_minute: 10 } });
      await k.client.chat.completions.create({ model: 'chat-A', messages: hi, max_tokens: 3 });
      const res = await admin(`/admin/keys/${k.keyId}/limits`);
      assert.equal(res.status, 200);
      const state = KeyLimitsStateSchema.parse(await res.json());
      assert.equal(state.key.id, k.keyId);
      assert.equal(state.key.tier, 'premium');
      assert.deepEqual(state.overrides, { key: { requests_per_minute: 10 } });
      const by = Object.fromEntries(state.limits.map((l) => [l.name, l]));
      assert.equal(by['key.requests_per_minute']?.limit, 10);
      assert.equal(by['key.requests_per_minute']?.used, 1);
      assert.equal(by['key.concurrent']?.used, 0);
      assert.ok((by['models.chat-A.tokens_per_minute']?.used ?? 0) > 3, 'real usage charged');
      assert.equal(by['models.chat-G.rolling_tokens']?.limit, 400_000_000);
      assert.equal(by['models.chat-G.allowance_tokens']?.window, 'billing_period');
      assert.equal(by['search.requests_per_day']?.code, 'insufficient_quota');
      assert.equal(by['images.requests_per_month']?.code, 'quota_exceeded');
      const missing = await admin('/admin/keys/nope/limits');
      assert.equal(missing.status, 404);
    });

    it('the admin CLI shows the live state through the admin API', async () => {
      const k = await newKey(stack, 'inference', { key: { concurrent: 3 } });
      await k.client.chat.completions.create({ model: 'chat-B', messages: hi, max_tokens: 1 });
      const out = await runAdminCli(['key', 'limits', k.keyId, '--json'], {
        DATABASE_URL: stack.databaseUrl,
        GATEWAY_URL: stack.url,
        ADMIN_TOKEN,
      });
      assert.equal(out.code, 0, out.stderr);
      const { state } = JSON.parse(out.stdout);
      const by = Object.fromEntries(
        (state.limits as { name: string; used: number; limit: number }[]).map((l) => [l.name, l]),
      );
      assert.equal(by['key.concurrent']?.limit, 3);
      assert.equal(by['key.requests_per_minute']?.used, 1);
    });

    it('reports usage per member, key and model for a period', async () => {
      const k = await newKey(stack, 'inference');
      const at = Date.UTC(2031, 0, 15);
      const ev = (i: number, model: string, tokens: number) => ({
        requestId: `req_report_${k.keyId}_${i}`,
        memberId: k.memberId,
        keyId: k.keyId,
        model,
        endpoint: '/v1/chat/completions',
        promptTokens: tokens - 1,
        completionTokens: 1,
        totalTokens: tokens,
        status: 200,
        latencyMs: 3,
        at: at + i,
      });
      await new UsageRepository(stack.prisma).insertBatch([
        ev(1, 'chat-A', 10),
        ev(2, 'chat-A', 20),
        ev(3, 'chat-B', 5),
      ]);
      const res = await admin(
        `/admin/usage?from=2031-01-01T00:00:00Z&to=2031-02-01T00:00:00Z&member=${k.memberId}&group_by=key,model`,
      );
      assert.equal(res.status, 200);
      const report = AdminUsageReportSchema.parse(await res.json());
      assert.deepEqual(report.group_by, ['key', 'model']);
      assert.deepEqual(
        report.rows.map((r) => [r.key_id, r.model, r.requests, r.total_tokens]),
        [
          [k.keyId, 'chat-A', 2, 30],
          [k.keyId, 'chat-B', 1, 5],
        ],
      );
      assert.equal(report.totals.total_tokens, 35);
      const bad = await admin('/admin/usage?from=yesterday');
      assert.equal(bad.status, 400);
      assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'from');
      const badGroup = await admin('/admin/usage?group_by=tier');
      assert.equal(((await badGroup.json()) as { error: { param: string } }).error.param, 'group_by');
    });
  });
});
