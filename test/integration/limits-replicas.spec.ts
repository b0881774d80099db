// Three gateway replicas sharing one Redis (and one database), hundreds of parallel requests split
// between them: exactly the allowed number is admitted, for requests per minute, concurrency, token
// budgets and token allowances. Both replicas read the same injected clock, fixed mid-minute, so no window rolls
// over during a burst.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import { CatalogService } from '../../apps/gateway/src/catalog/catalog.service.js';
import { estimatePromptTokens, TYPICAL_SAMPLES } from '../../apps/gateway/src/limits/estimate.js';
import { LimitsService } from '../../apps/gateway/src/limits/limits.service.js';
import { type Stack, startStack } from './harness.js';
import {
  countBy,
  newKey,
  type RawResult,
  rawChat,
  TestClock,
  type TestKey,
  writeCatalog,
  writeLimitsFile,
} from './limits-support.js';

/** Long enough that every request of a burst is admitted or refused before the first admitted one ends. */
const SLOW_TTFT_MS = 3000;

describe('limits across three gateway replicas sharing one Redis', () => {
  let stack: Stack;
  let second: RunningGateway;
  let third: RunningGateway;
  let clock: TestClock;
  let redis: Redis;
  let env: Record<string, string>;
  const prefix = `limrep:${Math.random().toString(36).slice(2)}:`;

  before(async () => {
    const catalogFile = writeCatalog({ 'chat-F': { ttft_ms: SLOW_TTFT_MS, default_output_tokens: 4 } });
    env = {
      LIMITS_ENABLED: '1',
      LIMITS_FILE: writeLimitsFile({}),
      LIMITS_REDIS_PREFIX: prefix,
      // NATS subjects of this run only: other test runs on this machine do not serve our requests.
      MODEL_SUBJECT_PREFIX: `test.${randomUUID()}.`,
    };
    stack = await startStack({ catalogFile, env });
    const replicaEnv = {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      HOST: '127.0.0.1',
      PORT: '0',
      ALLOW_INSECURE_HTTP: '1',
      LOG_LEVEL: 'silent',
      ...env,
    };
    second = await startGateway(replicaEnv);
    third = await startGateway(replicaEnv);
    clock = new TestClock(Date.UTC(2031, 4, 10, 12, 0, 15));
    clock.install(stack.gateway, second, third);
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  });
  after(async () => {
    await second?.close();
    await third?.close();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await stack?.close();
  });

  /** The `used` of one limit of a key, read until `ok` holds (settling is asynchronous) or 2 s pass. */
  const stateOf = async (
    k: TestKey,
    name: string,
    ok: (used: number) => boolean,
    overrides: Record<string, unknown> | null = null,
  ): Promise<number | undefined> => {
    const limits = stack.gateway.app.get(LimitsService);
    const chatF = stack.gateway.app.get(CatalogService).current.get('chat-F')!;
    const subject = {
      keyId: k.keyId,
      memberId: k.memberId,
      tier: 'inference' as const,
      billingAnchor: new Date(),
      overrides,
    };
    const deadline = Date.now() + 10_000;
    for (;;) {
      const used = (await limits.state(subject, [chatF])).find((s) => s.name === name)?.used;
      if ((used !== undefined && ok(used)) || Date.now() > deadline) return used;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  /** `n` requests at once, spread over the three replicas in turn. */
  const burst = (n: number, key: string, body: Record<string, unknown>): Promise<RawResult[]> => {
    const bases = [stack.baseURL, `${second.url}/v1`, `${third.url}/v1`];
    return Promise.all(Array.from({ length: n }, (_, i) => rawChat(bases[i % 3]!, key, body)));
  };

  it('requests per minute: 300 requests, exactly 50 admitted', async () => {
    const k = await newKey(stack, 'inference', { key: { requests_per_minute: 50, concurrent: null } });
    const results = await burst(300, k.key, {
      model: 'chat-E',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
    });
    assert.deepEqual(
      countBy(results, (r) => r.status),
      { 200: 50, 429: 250 },
    );
    const refusal = results.find((r) => r.status === 429)!;
    assert.equal(JSON.parse(refusal.body).error.code, 'rate_limit_exceeded');
    assert.equal(refusal.headers.get('retry-after'), '45');
    // Both replicas admitted some and refused some: the count is shared, not per process.
    const byReplica = countBy(
      results.map((r, i) => ({ r, i })),
      ({ r, i }) => `${i % 2}:${r.status}`,
    );
    assert.ok(byReplica['0:200']! > 0 && byReplica['1:200']! > 0, JSON.stringify(byReplica));
  });

  it('concurrency: 200 slow requests at once, exactly 7 admitted, and every slot is released after', async () => {
    const k = await newKey(stack, 'inference', { key: { requests_per_minute: null, concurrent: 7 } });
    const started = Date.now();
    const results = await burst(200, k.key, { model: 'chat-F', messages: [{ role: 'user', content: 'hi' }] });
    assert.ok(Date.now() - started >= SLOW_TTFT_MS);
    assert.deepEqual(
      countBy(results, (r) => r.status),
      { 200: 7, 429: 193 },
    );
    const refusal = JSON.parse(results.find((r) => r.status === 429)!.body).error;
    assert.equal(refusal.code, 'rate_limit_exceeded');
    assert.match(refusal.message, /concurrent/);
    // All slots free again, on both replicas and in Redis.
    for (const g of [stack.gateway, second]) assert.equal(g.app.get(LimitsService).store.activeCount, 0);
    assert.equal(await stateOf(k, 'key.concurrent', (used) => used === 0), 0);
  });

  it('token budget: 200 slow requests against 1,000 tokens per minute, the prompt and max_tokens reserved, real usage charged', async () => {
    const k = await newKey(stack, 'inference', {
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-F': { tokens_per_minute: 1000 } },
    });
    const body = { model: 'chat-F', messages: [{ role: 'user', content: 'x'.repeat(140) }], max_tokens: 4 };
    const estimate = estimatePromptTokens(body);
    // Each takes its prompt estimate and holds its max_tokens; the replicas have not yet seen enough
    // chat-F requests without max_tokens to know its typical output, so only the prompt must fit.
    const allowed = Math.floor((1000 - estimate) / (estimate + 4)) + 1;
    assert.ok(allowed > 5 && allowed < 100, `estimate ${estimate}`);
    const results = await burst(200, k.key, body);
    assert.deepEqual(
      countBy(results, (r) => r.status),
      { 200: allowed, 429: 200 - allowed },
    );
    const real = results
      .filter((r) => r.status === 200)
      .reduce(
        (n, r) => n + (JSON.parse(r.body) as { usage: { total_tokens: number } }).usage.total_tokens,
        0,
      );
    // Each reservation was replaced by the request's real usage.
    const used = await stateOf(k, 'models.chat-F.tokens_per_minute', (u) => u === real);
    assert.equal(used, real);
  });

  it('token allowance: 300 requests against a 3,000-token monthly allowance, each holding its max_tokens; at most one request over', async () => {
    const overrides = {
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-F': { tokens_per_minute: null, allowance_tokens: 3000 } },
    };
    const k = await newKey(stack, 'inference', overrides);
    const body = { model: 'chat-F', messages: [{ role: 'user', content: 'x'.repeat(140) }], max_tokens: 4 };
    const estimate = estimatePromptTokens(body);
    // Admission checks the prompt estimate against what is left, and takes estimate + max_tokens.
    const allowed = Math.floor((3000 - estimate) / (estimate + 4)) + 1;
    const results = await burst(300, k.key, body);
    assert.deepEqual(
      countBy(results, (r) => r.status),
      { 200: allowed, 402: 300 - allowed },
    );
    const real = results
      .filter((r) => r.status === 200)
      .reduce(
        (n, r) => n + (JSON.parse(r.body) as { usage: { total_tokens: number } }).usage.total_tokens,
        0,
      );
    const perRequest = real / allowed;
    assert.ok(real <= 3000 + perRequest, `spent ${real} of 3,000: at most one request over`);
    const used = await stateOf(k, 'models.chat-F.allowance_tokens', (u) => u === real, overrides);
    assert.equal(used, real, 'the holds were replaced by the real usage');
  });

  /**
   * The bursts: 300 requests WITHOUT max_tokens (chat-F's context window is 131,072 tokens) over
   * the three replicas, once each replica has served a few chat-F requests and learned what they
   * typically produce. They must end within one request's output of the limit, with no refusal while
   * the limit had room for another such request.
   */
  for (const limit of ['tokens_per_minute', 'allowance_tokens'] as const) {
    it(`${limit}: 300 requests without max_tokens against 2,000 tokens end within one output of the limit, no false refusals`, async () => {
      const body = { model: 'chat-F', messages: [{ role: 'user', content: 'x'.repeat(40) }] };
      // Warm-up (another key): each replica serves TYPICAL_SAMPLES such requests, in parallel, so that
      // what it learned from the earlier tests' chat-F requests (other prompts) has rolled out.
      const warm = await newKey(stack, 'inference', {
        key: { requests_per_minute: 100_000, concurrent: null },
        models: { 'chat-F': { tokens_per_minute: null, allowance_tokens: null } },
      });
      const bases = [stack.baseURL, `${second.url}/v1`, `${third.url}/v1`];
      const warmed = await Promise.all(
        bases.flatMap((b) => Array.from({ length: TYPICAL_SAMPLES }, () => rawChat(b, warm.key, body))),
      );
      assert.deepEqual(
        countBy(warmed, (r) => r.status),
        { 200: 3 * TYPICAL_SAMPLES },
      );
      const total = (JSON.parse(warmed[0]!.body) as { usage: { total_tokens: number } }).usage.total_tokens;
      const output = (JSON.parse(warmed[0]!.body) as { usage: { completion_tokens: number } }).usage
        .completion_tokens;

      const other = limit === 'tokens_per_minute' ? 'allowance_tokens' : 'tokens_per_minute';
      const overrides = {
        key: { requests_per_minute: null, concurrent: null },
        models: { 'chat-F': { [limit]: 2000, [other]: null } },
      };
      const k = await newKey(stack, 'inference', overrides);
      const results = await burst(300, k.key, body);
      const ok = results.filter((r) => r.status === 200);
      const refusedStatus = limit === 'allowance_tokens' ? 402 : 429;
      assert.deepEqual(
        countBy(results, (r) => r.status),
        { 200: ok.length, [refusedStatus]: 300 - ok.length },
      );
      const real = ok.reduce(
        (n, r) => n + (JSON.parse(r.body) as { usage: { total_tokens: number } }).usage.total_tokens,
        0,
      );
      assert.ok(real <= 2000 + output, `spent ${real} of 2,000: within one request's output (${output})`);
      assert.ok(
        real + total > 2000,
        `${300 - ok.length} refused while ${2000 - real} tokens were left (a request uses ${total})`,
      );
      const used = await stateOf(k, `models.chat-F.${limit}`, (u) => u === real, overrides);
      assert.equal(used, real, 'the holds were replaced by the real usage');
    });
  }
});
