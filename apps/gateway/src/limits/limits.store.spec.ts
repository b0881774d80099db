// The limits store against the machine's real Redis, with an injected clock: every period roll-over
// (minute, day, calendar month, rolling 4 hours, billing period), leases, settlement, rebuilds.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ApiError, type CatalogEntry, CatalogEntrySchema, type LimitsFile } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { Redis } from 'ioredis';
import { estimatePromptTokens } from './estimate.js';
import { type Admission, type LedgerSource, LimitsStore } from './limits.store.js';
import type { LimitSubject, RebuildQuery } from './plan.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const log = createLogger('limits-test', 'silent');

const entry = (id: string, extra: Record<string, unknown> = {}): CatalogEntry =>
  CatalogEntrySchema.parse({
    id,
    kind: 'chat',
    rank: 1,
    tiers: ['inference', 'premium'],
    engine: { type: 'simulator' },
    ...extra,
  });

const chatA = entry('chat-A', { allowance: { tokens: 3_000_000_000, period: 'month' } });
const chatF = entry('chat-F');
const chatG = entry('chat-G', {
  tiers: ['premium'],
  allowance: { tokens: 3_000_000_000, period: 'billing_period' },
});
const embed = entry('embed-model', { kind: 'embedding' });

/** A body whose prompt estimate is exactly `tokens` (see estimate.ts: chars/4 + 4 per message + 3). */
function bodyOf(tokens: number) {
  const b = { model: 'x', messages: [{ role: 'user', content: 'x'.repeat((tokens - 7) * 4) }] };
  assert.equal(estimatePromptTokens(b), tokens);
  return b;
}

/** The usage ledger as rows in memory (the test's stand-in for PostgreSQL). */
class MemoryLedger implements LedgerSource {
  rows: { memberId: string; keyId: string; model: string; endpoint: string; tokens: number; at: number }[] =
    [];
  calls = 0;
  async total(q: RebuildQuery): Promise<number> {
    this.calls++;
    const hits = this.rows.filter(
      (r) =>
        r.at >= +q.from &&
        r.at < +q.to &&
        (!q.memberId || r.memberId === q.memberId) &&
        (!q.keyId || r.keyId === q.keyId) &&
        (!q.model || r.model === q.model) &&
        (!q.endpoints || q.endpoints.includes(r.endpoint)) &&
        (!q.endpointPrefix || r.endpoint.startsWith(q.endpointPrefix)),
    );
    return q.unit === 'tokens' ? hits.reduce((n, r) => n + r.tokens, 0) : hits.length;
  }
}

async function refused(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  assert.fail('expected a refusal');
}

describe('LimitsStore (real Redis, injected clock)', () => {
  let redis: Redis;
  let prefix: string;
  let now: number;
  let ledger: MemoryLedger;
  const stores: LimitsStore[] = [];
  let subject: LimitSubject;

  const store = (file: LimitsFile = {}) => {
    const e = new LimitsStore({ redis, ledger, log, file, prefix, clock: () => now });
    stores.push(e);
    return e;
  };

  before(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
    await redis.connect();
  });
  after(async () => {
    for (const e of stores) await e.stop();
    const keys = await redis.keys('limtest:*');
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  beforeEach(() => {
    prefix = `limtest:${randomBytes(4).toString('hex')}:`;
    ledger = new MemoryLedger();
    subject = {
      keyId: `k${randomBytes(3).toString('hex')}`,
      memberId: `m${randomBytes(3).toString('hex')}`,
      tier: 'inference',
      billingAnchor: new Date(Date.UTC(2031, 0, 31, 10, 0, 0)),
      overrides: null,
    };
  });

  it('per-key requests per minute: exact, with Retry-After to the minute, then the minute rolls over', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 30, 250);
    const e = store({ key: { requests_per_minute: 3, concurrent: null } });
    const adm: Admission[] = [];
    for (let i = 0; i < 3; i++) adm.push(await e.admitModel(subject, embed, { input: 'hi' }));
    assert.equal(adm[0]!.headers['x-ratelimit-limit-requests'], '3');
    assert.equal(adm[0]!.headers['x-ratelimit-remaining-requests'], '2');
    assert.equal(adm[2]!.headers['x-ratelimit-remaining-requests'], '0');
    assert.equal(adm[0]!.headers['x-ratelimit-reset-requests'], '30s');
    const err = await refused(e.admitModel(subject, embed, { input: 'hi' }));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.equal(err.type, 'rate_limit_error');
    assert.equal(err.headers['retry-after'], '30');
    assert.equal(err.headers['x-ratelimit-remaining-requests'], '0');
    now += 29_749; // 12:00:59.999
    await refused(e.admitModel(subject, embed, { input: 'hi' }));
    now += 1; // 12:01:00.000
    const next = await e.admitModel(subject, embed, { input: 'hi' });
    assert.equal(next.headers['x-ratelimit-remaining-requests'], '2');
  });

  it('a per-model rate replaces the key-wide one (rerank 1000/min), null means none (chat-G)', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 0);
    const e = store({
      key: { requests_per_minute: 2, concurrent: null },
      models: { rerank: { requests_per_minute: 4 } },
    });
    const rerank = entry('rerank', { kind: 'rerank' });
    for (let i = 0; i < 4; i++) await e.admitModel(subject, rerank, { query: 'q', documents: ['a'] });
    await refused(e.admitModel(subject, rerank, { query: 'q', documents: ['a'] }));
    // The key-wide bucket is untouched by rerank.
    await e.admitModel(subject, embed, { input: 'a' });
    await e.admitModel(subject, embed, { input: 'a' });
    await refused(e.admitModel(subject, embed, { input: 'a' }));
    const premium = { ...subject, tier: 'premium' as const };
    for (let i = 0; i < 10; i++) (await e.admitModel(premium, chatG, bodyOf(10))).settle(10);
  });

  it('concurrency: leases are released by settle, and a dead replica’s leases expire', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 0);
    const file: LimitsFile = { key: { requests_per_minute: null, concurrent: 2 }, lease_ttl_ms: 3000 };
    const a = store(file);
    const b = store(file);
    const first = await a.admitModel(subject, embed, { input: 'a' });
    await b.admitModel(subject, embed, { input: 'a' });
    const err = await refused(a.admitModel(subject, embed, { input: 'a' }));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.equal(err.headers['retry-after'], '1');
    assert.equal(err.headers['x-ratelimit-limit-concurrent-requests'], '2');
    assert.equal(err.headers['x-ratelimit-remaining-concurrent-requests'], '0');
    assert.match(err.headers['x-ratelimit-reset-concurrent-requests'] ?? '', /^\d+(ms|s)/);
    await first.settle();
    await first.settle(); // twice is harmless
    const third = await b.admitModel(subject, embed, { input: 'a' });
    assert.ok(third);
    // `b` now holds two slots and dies (no settle, no renewal). Its leases run out after the TTL.
    await refused(a.admitModel(subject, embed, { input: 'a' }));
    now += 3001;
    await a.admitModel(subject, embed, { input: 'a' });
    await a.admitModel(subject, embed, { input: 'a' });
    await refused(a.admitModel(subject, embed, { input: 'a' }));
    // A live replica renews its leases: they survive past the TTL.
    now += 2000;
    await a.renew();
    now += 2000;
    await refused(a.admitModel(subject, embed, { input: 'a' }));
  });

  it('concurrency: admissions settled in any order leave exactly the others held and renewed', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 5);
    const file: LimitsFile = { key: { requests_per_minute: null, concurrent: 5 }, lease_ttl_ms: 3000 };
    const e = store(file);
    const held: Admission[] = [];
    for (let i = 0; i < 5; i++) held.push(await e.admitModel(subject, embed, { input: 'a' }));
    assert.equal(e.activeCount, 5);
    // The middle, the first, the last (the list moves its last entry into a freed place), twice one.
    await held[2]!.settle();
    await held[0]!.settle();
    await held[4]!.settle();
    await held[0]!.settle();
    assert.equal(e.activeCount, 2);
    // The two left are renewed past the TTL: three more fit, not four.
    now += 2000;
    await e.renew();
    now += 2000;
    for (let i = 0; i < 3; i++) held.push(await e.admitModel(subject, embed, { input: 'a' }));
    await refused(e.admitModel(subject, embed, { input: 'a' }));
    assert.equal(e.activeCount, 5);
    for (const a of held) await a.settle();
    assert.equal(e.activeCount, 0);
    await e.admitModel(subject, embed, { input: 'a' });
  });

  it('tokens per minute: the prompt and the output are reserved, the real usage settles, a prompt too large is refused', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 10);
    const e = store({
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-F': { tokens_per_minute: 1000 } },
    });
    // A 300-token prompt that may produce 100 tokens: 400 reserved (the model's typical output is not
    // known yet: the whole cap is held, and only the prompt must fit).
    const body = { ...bodyOf(300), max_tokens: 100 };
    const a1 = await e.admitModel(subject, chatF, body);
    assert.equal(a1.headers['x-ratelimit-limit-tokens'], '1000');
    assert.equal(a1.headers['x-ratelimit-remaining-tokens'], '600');
    assert.equal(a1.headers['x-ratelimit-reset-tokens'], '50s');
    const a2 = await e.admitModel(subject, chatF, body);
    const over = await refused(e.admitModel(subject, chatF, body));
    assert.equal(over.status, 429);
    assert.equal(over.headers['retry-after'], '50');
    assert.equal(over.headers['x-ratelimit-remaining-tokens'], '200');
    // The real usage replaces the reservation: 400 reserved, 350 used; and 400 reserved, 0 used.
    await a1.settle(350);
    await a2.settle(0);
    const a3 = await e.admitModel(subject, chatF, body);
    assert.equal(a3.headers['x-ratelimit-remaining-tokens'], String(1000 - 350 - 400));
    // Whatever is free, a prompt larger than the whole budget never fits.
    now += 60_000;
    const huge = await refused(e.admitModel(subject, chatF, bodyOf(1001)));
    assert.equal(huge.status, 429);
    assert.match(huge.message, /prompt alone/);
  });

  it("once a model's typical output is known, requests without max_tokens reserve it, not the context window", async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 10);
    const window = entry('chat-W', { context_window: 8192 });
    const e = store({
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-W': { tokens_per_minute: 100_000, allowance_tokens: 1_000_000 } },
    });
    const body = bodyOf(20);
    // Cold: the whole context window (minus the prompt) is held.
    const cold = await e.admitModel(subject, window, body);
    assert.equal(cold.held, 8192 - 20);
    await cold.settle(20 + 30);
    for (let i = 0; i < 7; i++) await (await e.admitModel(subject, window, body)).settle(20 + 30 + i);
    // Eight settled requests produced 30..36 tokens: the 90th percentile, 36, is held from now on.
    const warm = await e.admitModel(subject, window, body);
    assert.equal(warm.held, 36);
    await warm.settle(20 + 40);
    // A request's own max_tokens below the typical output caps the hold; its output teaches nothing.
    const capped = await e.admitModel(subject, window, { ...body, max_tokens: 5 });
    assert.equal(capped.held, 5);
    assert.equal(capped.learns, null);
    await capped.settle(25);
  });

  for (const limit of ['tokens_per_minute', 'allowance_tokens'] as const) {
    it(`${limit}: 300 concurrent requests without max_tokens over 3 replicas end within one output of the limit, no false refusals`, async () => {
      now = Date.UTC(2031, 4, 10, 12, 0, 5);
      const model = entry('chat-B', { context_window: 2048 });
      const other = limit === 'tokens_per_minute' ? 'allowance_tokens' : 'tokens_per_minute';
      const file: LimitsFile = {
        key: { requests_per_minute: null, concurrent: null },
        models: { 'chat-B': { [limit]: 2000, [other]: null } },
      };
      const replicas = [store(file), store(file), store(file)];
      const body = bodyOf(10);
      const OUTPUT = 17; // what each request produces (total = 10 + 17)
      // Each replica has seen a few requests of the model (it learns their typical output).
      for (const e of replicas)
        for (let i = 0; i < 8; i++) await (await e.admitModel(subject, model, body)).settle(10 + OUTPUT);
      if (limit === 'tokens_per_minute') now += 60_000; // the burst starts in a fresh minute
      const stateOf = async () =>
        (await replicas[0]!.state(subject, [model])).find((x) => x.name === `models.chat-B.${limit}`)!.used;
      const before = await stateOf();
      const tried = await Promise.allSettled(
        Array.from({ length: 300 }, (_, i) => replicas[i % 3]!.admitModel(subject, model, body)),
      );
      const admitted = tried.filter((t) => t.status === 'fulfilled').map((t) => t.value);
      for (const t of tried)
        if (t.status === 'rejected')
          assert.equal((t.reason as { status?: number }).status, limit === 'allowance_tokens' ? 402 : 429);
      await Promise.all(admitted.map((a) => a.settle(10 + OUTPUT)));
      const spent = (await stateOf()) - before;
      const room = 2000 - before;
      assert.equal(spent, admitted.length * (10 + OUTPUT), 'the counter holds the real use');
      assert.ok(spent <= room + OUTPUT, `spent ${spent} of ${room}: within one request's output`);
      assert.ok(
        spent + 10 + OUTPUT > room,
        `${tried.length - admitted.length} refused while ${room - spent} tokens were left for requests of ${10 + OUTPUT}`,
      );
    });
  }

  it('monthly allowance: 402 monthly_cap_reached, not retryable, until the calendar month turns', async () => {
    now = Date.UTC(2031, 0, 31, 23, 0, 0);
    const e = store({
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-A': { allowance_tokens: 1000, tokens_per_minute: null } },
    });
    const a = await e.admitModel(subject, chatA, bodyOf(100));
    await a.settle(990);
    const err = await refused(e.admitModel(subject, chatA, bodyOf(20)));
    assert.equal(err.status, 402);
    assert.equal(err.code, 'monthly_cap_reached');
    assert.equal(err.type, 'insufficient_quota');
    assert.equal(err.headers['retry-after'], undefined);
    assert.match(err.message, /2031-02-01T00:00:00Z/);
    // A prompt that fits in what is left is still admitted.
    await (await e.admitModel(subject, chatA, bodyOf(10))).settle(10);
    await refused(e.admitModel(subject, chatA, bodyOf(8)));
    now = Date.UTC(2031, 1, 1, 0, 0, 0);
    await e.admitModel(subject, chatA, bodyOf(900));
  });

  it('token allowances hold the possible output: 300 concurrent requests end at most one request over', async () => {
    now = Date.UTC(2031, 5, 10, 12, 0, 0);
    const allowance = 3000;
    const e = store({
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-A': { allowance_tokens: allowance, tokens_per_minute: null } },
    });
    // Each request: a 20-token prompt that may produce up to 100 tokens, and does.
    const body = { ...bodyOf(20), max_tokens: 100 };
    const tried = await Promise.allSettled(
      Array.from({ length: 300 }, () => e.admitModel(subject, chatA, body)),
    );
    const admitted = tried.filter((t) => t.status === 'fulfilled').map((t) => t.value);
    for (const t of tried)
      if (t.status === 'rejected') assert.equal((t.reason as { status?: number }).status, 402);
    await Promise.all(admitted.map((a) => a.settle(120)));
    const spent = admitted.length * 120;
    assert.ok(admitted.length > 0);
    assert.ok(spent <= allowance + 120, `spent ${spent} of ${allowance}: at most one request over`);
    const state = Object.fromEntries((await e.state(subject, [chatA])).map((s) => [s.name, s]));
    assert.equal(state['models.chat-A.allowance_tokens']?.used, spent, 'the counter holds the real use');
  });

  it('chat-G: 429 after the rolling 4-hour budget, freed as the window rolls; 402 per billing period', async () => {
    const premium: LimitSubject = { ...subject, tier: 'premium' };
    now = Date.UTC(2031, 1, 28, 4, 0, 0);
    const e = store({
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-G': { rolling_tokens: { tokens: 1000, window_minutes: 240 }, allowance_tokens: 2000 } },
    });
    const t0 = now;
    await (await e.admitModel(premium, chatG, bodyOf(100))).settle(600);
    now = t0 + 3_600_000;
    const second = await e.admitModel(premium, chatG, bodyOf(100));
    assert.equal(second.headers['x-ratelimit-limit-tokens'], '1000');
    await second.settle(300);
    now = t0 + 2 * 3_600_000;
    const err = await refused(e.admitModel(premium, chatG, bodyOf(200)));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'insufficient_quota');
    // The first 600 drop out 4 hours after they were counted: 2 hours from now.
    assert.equal(err.headers['retry-after'], String(2 * 3600));
    now = t0 + 4 * 3_600_000 - 1;
    await refused(e.admitModel(premium, chatG, bodyOf(200)));
    now = t0 + 4 * 3_600_000;
    await (await e.admitModel(premium, chatG, bodyOf(200))).settle(1000);
    // 1900 of 2000 spent in this billing period (which started Jan 31 10:00, the anchor).
    now = t0 + 9 * 3_600_000; // Feb 28 13:00: a new period started at 10:00 (Feb has no 31st)
    await (await e.admitModel(premium, chatG, bodyOf(100))).settle(0);
    // Spend this period's allowance over several rolling windows.
    now = Date.UTC(2031, 2, 5);
    await (await e.admitModel(premium, chatG, bodyOf(100))).settle(1000);
    now = Date.UTC(2031, 2, 10);
    await (await e.admitModel(premium, chatG, bodyOf(100))).settle(990);
    now = Date.UTC(2031, 2, 20);
    const cap = await refused(e.admitModel(premium, chatG, bodyOf(20)));
    assert.equal(cap.status, 402);
    assert.equal(cap.code, 'monthly_cap_reached');
    assert.match(cap.message, /2031-03-31T10:00:00Z/);
    now = Date.UTC(2031, 2, 31, 9, 59, 59);
    await refused(e.admitModel(premium, chatG, bodyOf(20)));
    now = Date.UTC(2031, 2, 31, 10, 0, 0);
    await e.admitModel(premium, chatG, bodyOf(20));
  });

  it('search: 429 rate_limit_exceeded per minute and concurrency, 429 insufficient_quota per UTC day', async () => {
    now = Date.UTC(2031, 4, 10, 23, 58, 0);
    const e = store({ search: { requests_per_minute: 3, concurrent: 2, requests_per_day: 5 } });
    const s1 = await e.admitSearch(subject);
    const s2 = await e.admitSearch(subject);
    const busy = await refused(e.admitSearch(subject));
    assert.equal(busy.code, 'rate_limit_exceeded');
    assert.equal(busy.headers['retry-after'], '1');
    await s1.release();
    await s2.release();
    await (await e.admitSearch(subject)).release();
    const rate = await refused(e.admitSearch(subject));
    assert.equal(rate.code, 'rate_limit_exceeded');
    assert.equal(rate.type, 'rate_limit_error');
    assert.equal(rate.headers['retry-after'], '60');
    // A new minute on the same day: two more fit in the day's 5, then the day's quota is spent.
    now = Date.UTC(2031, 4, 10, 23, 59, 0);
    await (await e.admitSearch(subject)).release();
    await (await e.admitSearch(subject)).release();
    const day = await refused(e.admitSearch(subject));
    assert.equal(day.status, 429);
    assert.equal(day.code, 'insufficient_quota');
    assert.equal(day.type, 'insufficient_quota');
    assert.equal(day.headers['retry-after'], '60', 'until midnight UTC');
    now = Date.UTC(2031, 4, 10, 23, 59, 59, 999);
    await refused(e.admitSearch(subject));
    now = Date.UTC(2031, 4, 11, 0, 0, 0);
    await (await e.admitSearch(subject)).release();
  });

  it('a priced search reserves its price against the budget: two fit a budget of two, the third is 402 while they run', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 0);
    // $0.01 a month for the key; a search costs $0.005 (5,000,000 nano-dollars).
    const e = store({ budget: { key_per_month: '0.01' }, search: { concurrent: 10 } });
    const a = await e.admitSearch(subject, 5_000_000);
    const b = await e.admitSearch(subject, 5_000_000);
    const third = await refused(e.admitSearch(subject, 5_000_000));
    assert.equal(third.status, 402);
    assert.equal(third.code, 'budget_exceeded');
    // One failed (nothing to pay): its reservation comes back, and one more search fits.
    await a.settle(0, 0);
    await b.settle(0, 5_000_000);
    await (await e.admitSearch(subject, 5_000_000)).settle(0, 5_000_000);
    assert.equal((await refused(e.admitSearch(subject, 5_000_000))).code, 'budget_exceeded');
  });

  it('images: per member per minute and per calendar month (429 quota_exceeded), whatever n', async () => {
    now = Date.UTC(2031, 4, 31, 23, 58, 0);
    const e = store({ images: { requests_per_minute: 2, requests_per_month: 3 } });
    const image = entry('image-model', { kind: 'image' });
    const otherKey = { ...subject, keyId: 'another-key-of-the-member' };
    await (await e.admitModel(subject, image, { prompt: 'p', n: 4 })).release();
    await (await e.admitImages(otherKey)).release();
    const rate = await refused(e.admitImages(subject));
    assert.equal(rate.code, 'rate_limit_exceeded');
    now += 60_000;
    await (await e.admitImages(subject)).release();
    const month = await refused(e.admitImages(otherKey));
    assert.equal(month.status, 429);
    assert.equal(month.code, 'quota_exceeded');
    assert.equal(month.headers['retry-after'], '60');
    now = Date.UTC(2031, 5, 1);
    await (await e.admitImages(subject)).release();
  });

  it('quota counters lost by Redis are rebuilt from the ledger before anything is admitted', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 0);
    const e = store({
      key: { requests_per_minute: null, concurrent: null },
      models: { 'chat-A': { allowance_tokens: 1000, tokens_per_minute: null } },
    });
    const row = {
      memberId: subject.memberId,
      keyId: subject.keyId,
      model: 'chat-A',
      endpoint: '/v1/chat/completions',
    };
    ledger.rows.push({ ...row, tokens: 950, at: Date.UTC(2031, 4, 2) });
    ledger.rows.push({ ...row, tokens: 5000, at: Date.UTC(2031, 3, 30) }); // last month: not counted
    ledger.rows.push({ ...row, model: 'chat-B', tokens: 5000, at: Date.UTC(2031, 4, 3) }); // other model
    const err = await refused(e.admitModel(subject, chatA, bodyOf(60)));
    assert.equal(err.status, 402);
    assert.equal(ledger.calls, 1);
    await (await e.admitModel(subject, chatA, bodyOf(40))).settle(40);
    assert.equal(ledger.calls, 1, 'rebuilt once, then counted in Redis');
    // Redis loses everything: the counter comes back from the ledger (which now has the 40 too).
    await redis.del(...(await redis.keys(`${prefix}*`)));
    ledger.rows.push({ ...row, tokens: 40, at: now });
    await refused(e.admitModel(subject, chatA, bodyOf(20)));
    assert.equal(ledger.calls, 2);
    const state = await e.state(subject, [chatA]);
    const allowance = state.find((s) => s.name === 'models.chat-A.allowance_tokens');
    assert.deepEqual(
      {
        used: allowance?.used,
        limit: allowance?.limit,
        remaining: allowance?.remaining,
        window: allowance?.window,
      },
      { used: 990, limit: 1000, remaining: 10, window: 'month' },
    );
  });

  it('tier and per-key overrides: defaults < file < tier < key; invalid key overrides are ignored', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 0);
    const e = store({
      key: { requests_per_minute: 10 },
      tiers: { premium: { key: { requests_per_minute: 20 } } },
    });
    assert.equal(e.limitsFor({ tier: 'inference', overrides: null }).key.requests_per_minute, 10);
    assert.equal(e.limitsFor({ tier: 'inference', overrides: null }).key.concurrent, 5, 'spec default');
    assert.equal(e.limitsFor({ tier: 'premium', overrides: null }).key.requests_per_minute, 20);
    const o = { key: { requests_per_minute: 1 } };
    assert.equal(e.limitsFor({ tier: 'premium', overrides: o }).key.requests_per_minute, 1);
    assert.equal(
      e.limitsFor({ tier: 'premium', overrides: { key: { rpm: 1 } } }).key.requests_per_minute,
      20,
    );
    assert.equal(
      e.limitsFor({ tier: 'inference', overrides: null }).models['chat-A']?.tokens_per_minute,
      1_500_000,
    );
    const limited = { ...subject, overrides: o };
    await e.admitModel(limited, embed, { input: 'a' });
    await refused(e.admitModel(limited, embed, { input: 'a' }));
  });

  it('state shows every limit of a key with its use', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 0);
    const e = store();
    const a = await e.admitModel(subject, chatA, { ...bodyOf(100), max_tokens: 50 });
    const st = await e.state(subject, [chatA, chatF, embed]);
    const by = Object.fromEntries(st.map((s) => [s.name, s]));
    assert.equal(by['key.requests_per_minute']?.used, 1);
    assert.equal(by['key.requests_per_minute']?.limit, 60);
    assert.equal(by['key.concurrent']?.used, 1);
    assert.equal(by['models.chat-A.tokens_per_minute']?.used, 150, 'prompt estimate and output held');
    assert.equal(by['models.chat-A.allowance_tokens']?.limit, 3_000_000_000);
    assert.equal(by['models.chat-F.tokens_per_minute']?.used, 0);
    assert.equal(by['search.requests_per_day']?.limit, 500);
    await a.settle(150);
    const after = Object.fromEntries((await e.state(subject, [chatA])).map((s) => [s.name, s]));
    assert.equal(after['key.concurrent']?.used, 0);
    assert.equal(after['models.chat-A.tokens_per_minute']?.used, 150);
    assert.equal(after['models.chat-A.allowance_tokens']?.used, 150);
  });

  it('a refusal by a later check gives back what the earlier checks took (rates, quotas, rolling budget)', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 10);
    const e = store({
      key: { requests_per_minute: 3, concurrent: 1 },
      models: {
        'chat-A': {
          tokens_per_minute: null,
          rolling_tokens: { tokens: 10_000, window_minutes: 240 },
          allowance_tokens: 10_000,
        },
      },
    });
    const held = await e.admitModel(subject, chatA, { ...bodyOf(100), max_tokens: 50 });
    // Five more are refused by the key's single slot, after the allowance, the rolling budget and the
    // key's rate were checked (and taken) before it.
    for (let i = 0; i < 5; i++) {
      const err = await refused(e.admitModel(subject, chatA, { ...bodyOf(100), max_tokens: 50 }));
      assert.match(err.message, /concurrent/);
    }
    const by = async () => Object.fromEntries((await e.state(subject, [chatA])).map((s) => [s.name, s.used]));
    assert.deepEqual(
      [
        (await by())['key.requests_per_minute'],
        (await by())['models.chat-A.rolling_tokens'],
        (await by())['models.chat-A.allowance_tokens'],
      ],
      [1, 150, 150],
      'only the admitted request is counted',
    );
    await held.settle(120);
    await (await e.admitModel(subject, chatA, bodyOf(100))).settle(100);
    await (await e.admitModel(subject, chatA, bodyOf(100))).settle(100);
    const rate = await refused(e.admitModel(subject, chatA, bodyOf(100)));
    assert.match(rate.message, /requests per minute/);
    const after = await by();
    assert.equal(after['models.chat-A.rolling_tokens'], 320);
    assert.equal(after['models.chat-A.allowance_tokens'], 320);
  });

  it('an idle lane sends a lone admission before the end of the turn; admissions opened together still share calls', async () => {
    now = Date.UTC(2031, 4, 10, 12, 0, 30, 250);
    const counted = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
    await counted.connect();
    let calls = 0;
    let turnEnded = false;
    let sentInTurn: boolean | null = null;
    const evalsha = counted.evalsha.bind(counted);
    (counted as unknown as { evalsha: typeof evalsha }).evalsha = ((...a: Parameters<typeof evalsha>) => {
      calls++;
      sentInTurn ??= !turnEnded;
      return evalsha(...a);
    }) as typeof evalsha;
    try {
      const e = new LimitsStore({
        redis: counted,
        ledger,
        log,
        prefix,
        file: { key: { requests_per_minute: 1000, concurrent: null } },
        clock: () => now,
      });
      // Queued before the admission: it runs at the end of this turn, before any batch of the store.
      setImmediate(() => {
        turnEnded = true;
      });
      await e.admitModel(subject, embed, { input: 'hi' });
      assert.equal(calls, 1);
      assert.equal(sentInTurn, true, 'the lone admission waited for the end of the turn');
      calls = 0;
      const many = await Promise.all(
        Array.from({ length: 20 }, () => e.admitModel(subject, embed, { input: 'hi' })),
      );
      assert.equal(many.length, 20);
      assert.ok(calls >= 1 && calls <= 2, `${calls} script calls for 20 admissions opened in one turn`);
      assert.equal(many[19]!.headers['x-ratelimit-remaining-requests'], '979');
    } finally {
      counted.disconnect();
    }
  });

  it('off: admits everything and counts nothing', async () => {
    const e = new LimitsStore({
      redis,
      ledger,
      log,
      prefix,
      enabled: false,
      file: { key: { requests_per_minute: 0 } },
    });
    const a = await e.admitModel(subject, embed, { input: 'a' });
    assert.deepEqual(a.headers, {});
    assert.deepEqual(await redis.keys(`${prefix}*`), []);
  });
});
