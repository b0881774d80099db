/**
 * Engine pools through the real gateway and chat-service, with the openai SDK, against vLLM SIMULATOR
 * replicas (libs/engine-pool/src/testing/vllm-simulator.ts, a test double speaking vLLM's HTTP API):
 * prefix affinity, a killed replica, cooldown and recovery, fallback models, the tier-ordered queue,
 * 503 overloaded with Retry-After, a resumed stream, and long new documents kept apart (ADR 0062).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EnginePoolSchema } from '@infer/contracts';
import { chatAffinityKey, EnginePool, enginePoolStatus } from '@infer/engine-pool';
import { VllmSimulator } from '@infer/engine-pool/testing';
import OpenAI from 'openai';
import { waitFor } from '../support/wait-for.js';
import { type Stack, startStack } from './harness.js';

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

const caps = { streaming: true };
const model = (id: string, engine: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id,
  kind: 'chat',
  rank: 10,
  tiers: ['community', 'inference', 'premium'],
  context_window: 32768,
  capabilities: caps,
  engine: { type: 'openai', health_path: '/health', probe_interval_ms: 100, ...engine },
  ...extra,
});

describe('engine pools through the gateway (openai SDK, vLLM simulator replicas)', () => {
  let stack: Stack;
  let dir: string;
  const fleet = [0, 1, 2].map((i) => new VllmSimulator({ name: `fleet${i}`, timeScale: 0.2 }));
  const slow = new VllmSimulator({ name: 'slow', timeScale: 1, decodeMsBase: 20 });
  const resumeA = new VllmSimulator({ name: 'resumeA', timeScale: 0.2 });
  const resumeB = new VllmSimulator({ name: 'resumeB', timeScale: 0.2 });
  // Slow prefill (0.6 ms a token: a 5,000-token document takes 3 s), so a second document arrives while
  // the first is still prefilling.
  const cold = [0, 1].map(
    (i) => new VllmSimulator({ name: `cold${i}`, timeScale: 1, prefillMsPerToken: 0.6, decodeMsBase: 5 }),
  );
  const all = [...fleet, slow, resumeA, resumeB, ...cold];

  before(async () => {
    await Promise.all(all.map((s) => s.start()));
    dir = mkdtempSync(join(tmpdir(), 'engine-pools-'));
    const down = `http://127.0.0.1:${await closedPort()}/v1`;
    const catalog = {
      models: [
        model('pool-chat', { endpoints: fleet.map((s) => ({ url: s.url })), retries: 2 }),
        model(
          'pool-down',
          { endpoints: [{ url: down }] },
          { fallbacks: ['pool-premium-only', 'pool-fallback'] },
        ),
        model('pool-fallback', { endpoints: [{ url: fleet[0]?.url }] }),
        { ...model('pool-premium-only', { endpoints: [{ url: fleet[1]?.url }] }), tiers: ['premium'] },
        model('pool-queue', {
          base_url: slow.url,
          max_inflight_per_endpoint: 1,
          queue_timeout_ms: 20_000,
          tier_priority: true,
        }),
        model('pool-tight', { base_url: slow.url, max_inflight_per_endpoint: 1, queue_timeout_ms: 100 }),
        model('pool-cold', { endpoints: cold.map((s) => ({ url: s.url })) }),
        model('pool-resume', {
          endpoints: [{ url: resumeA.url }, { url: resumeB.url }],
          routing: 'round_robin',
          resume: true,
        }),
      ],
    };
    const catalogFile = join(dir, 'models.json');
    writeFileSync(catalogFile, JSON.stringify(catalog));
    stack = await startStack({ catalogFile });
  });

  after(async () => {
    await stack?.close();
    await Promise.all(all.map((s) => s.kill()));
    rmSync(dir, { recursive: true, force: true });
  });

  const served = () => fleet.map((s) => s.stats.requests);
  const whoServed = (before: number[]) => {
    const after = served();
    const got = after.map((n, i) => n - (before[i] ?? 0));
    assert.equal(
      got.reduce((a, b) => a + b, 0),
      1,
      `exactly one replica served the request (${got.join(',')})`,
    );
    return got.indexOf(1);
  };

  it('sends every turn of a conversation to the same replica', async () => {
    const client = stack.client('inference', { maxRetries: 0 });
    const homes = new Set<number>();
    for (let c = 0; c < 6; c++) {
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'system', content: 'You are a careful assistant. '.repeat(10) },
        { role: 'user', content: `Conversation ${c}: tell me about ships.` },
      ];
      let before = served();
      const first = await client.chat.completions.create({ model: 'pool-chat', messages, max_tokens: 8 });
      const home = whoServed(before);
      homes.add(home);
      messages.push({ role: 'assistant', content: first.choices[0]?.message.content ?? '' });
      for (let turn = 0; turn < 2; turn++) {
        messages.push({ role: 'user', content: `And then (${turn})?` });
        before = served();
        const next = await client.chat.completions.create({ model: 'pool-chat', messages, max_tokens: 8 });
        assert.equal(whoServed(before), home, `conversation ${c} stays on replica ${home}`);
        messages.push({ role: 'assistant', content: next.choices[0]?.message.content ?? '' });
      }
    }
    assert.ok(homes.size >= 2, 'conversations spread over the replicas');
  });

  it("two long new documents with one ring endpoint go to different replicas; each conversation's later turns follow its first", async () => {
    const client = stack.client('inference', { maxRetries: 0 });
    // Two first turns whose affinity keys map to the same endpoint (the ring is the same in every pool
    // of these endpoints: found with a local one).
    const ring = new EnginePool(
      EnginePoolSchema.parse({ endpoints: cold.map((s) => ({ url: s.url })), probe_interval_ms: 0 }),
      { model: 'ring-probe' },
    );
    const sys = { role: 'system' as const, content: 'You read documents. '.repeat(20) };
    const firstTurn = (i: number): OpenAI.ChatCompletionMessageParam[] => [
      sys,
      {
        role: 'user',
        content: `Document ${i}. ${'The quick brown fox jumps over the lazy dog. '.repeat(450)}`,
      },
    ];
    const homeOf = (i: number) => ring.pick({ key: chatAffinityKey(firstTurn(i) as never) }, 0)?.url;
    let j = 1;
    while (homeOf(j) !== homeOf(0)) j++;
    void ring.close();
    const stats = () => cold.map((s) => s.stats.requests);
    // The gateway answers once the first token is there, so A is not awaited before B is sent.
    const a = client.chat.completions.create({ model: 'pool-cold', messages: firstTurn(0), max_tokens: 4 });
    // A's request is admitted by its engine (prefilling for seconds) before B is sent.
    await waitFor('the first document admitted', () => stats().reduce((x, y) => x + y, 0) === 1, {
      timeoutMs: 10_000,
      everyMs: 10,
    });
    const aAt = stats().indexOf(1);
    const b = client.chat.completions.create({ model: 'pool-cold', messages: firstTurn(j), max_tokens: 4 });
    await waitFor('the second document admitted', () => stats().reduce((x, y) => x + y, 0) === 2, {
      timeoutMs: 10_000,
      everyMs: 10,
    });
    assert.deepEqual(stats(), [1, 1], 'the second document went to the other replica');
    const [aAnswer, bAnswer] = await Promise.all([a, b]);
    const aText = aAnswer.choices[0]?.message.content ?? '';
    // Each conversation's next turn goes where its document is cached.
    for (const [i, answer, at] of [
      [0, aText, aAt],
      [j, bAnswer.choices[0]?.message.content ?? '', 1 - aAt],
    ] as const) {
      const before = stats();
      await client.chat.completions.create({
        model: 'pool-cold',
        messages: [
          ...firstTurn(i),
          { role: 'assistant', content: answer },
          { role: 'user', content: 'And?' },
        ],
        max_tokens: 4,
      });
      const after = stats();
      assert.equal((after[at] ?? 0) - (before[at] ?? 0), 1, `conversation ${i} stays on replica ${at}`);
    }
  });

  it('a killed replica fails no request before the first byte; it cools down and comes back after a probe', async () => {
    const client = stack.client('inference', { maxRetries: 0 });
    const victim = fleet[2] as VllmSimulator;
    const port = victim.port;
    await victim.kill();
    const results = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const stream = await client.chat.completions.create({
          model: 'pool-chat',
          messages: [{ role: 'user', content: `request ${i} after the kill` }],
          max_tokens: 4,
          stream: true,
        });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        return text;
      }),
    );
    assert.ok(results.every((t) => t.length > 0));
    const status = () =>
      enginePoolStatus()
        .find((p) => p.model === 'pool-chat')
        ?.endpoints.find((e) => e.url === victim.url);
    await waitFor('the killed replica cooling down', () => status()?.state === 'cooling');
    assert.ok((status()?.errors ?? 0) >= 1);
    assert.match(status()?.last_error ?? '', /connect|probe/);
    // Back on the same port: a probe passes at the end of a cooldown, then it takes a growing share.
    const revived = new VllmSimulator({ name: 'fleet2', timeScale: 0.2, port });
    await revived.start();
    fleet[2] = revived;
    all.push(revived);
    await waitFor('recovery', () => status()?.state !== 'cooling', { timeoutMs: 40_000 });
    assert.ok(['recovering', 'up'].includes(status()?.state ?? ''));
  });

  it('falls back to the first fallback model the tier may use, and says so', async () => {
    const client = stack.client('inference', { maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ model: 'pool-down', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 })
      .withResponse();
    assert.equal(data.model, 'pool-fallback', 'pool-premium-only is not for the inference tier');
    assert.equal(response.headers.get('x-infer-fallback'), 'pool-down');
    assert.equal(response.headers.get('openai-model'), 'pool-fallback');
    const premium = stack.client('premium', { maxRetries: 0 });
    const { data: stream, response: sr } = await premium.chat.completions
      .create({
        model: 'pool-down',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 4,
        stream: true,
      })
      .withResponse();
    assert.equal(sr.headers.get('x-infer-fallback'), 'pool-down');
    const models = new Set<string>();
    for await (const chunk of stream) models.add(chunk.model);
    assert.deepEqual([...models], ['pool-premium-only']);
  });

  it('when saturated, serves premium before community, and a full queue is 503 overloaded with Retry-After', async () => {
    const order: string[] = [];
    const ask = async (tier: 'community' | 'premium', tag: string) => {
      const c = stack.client(tier, { maxRetries: 0 });
      const stream = await c.chat.completions.create({
        model: 'pool-queue',
        messages: [{ role: 'user', content: tag }],
        max_tokens: 20,
        stream: true,
      });
      let first = true;
      for await (const chunk of stream) {
        if (first && chunk.choices[0]?.delta.content) {
          first = false;
          order.push(tag);
        }
      }
    };
    const holder = ask('community', 'holder');
    await waitFor('the holder running', () => order.includes('holder'));
    const queued = () => enginePoolStatus().find((p) => p.model === 'pool-queue')?.queued;
    const c1 = ask('community', 'community');
    await waitFor('community queued', () => queued()?.community === 1);
    const p1 = ask('premium', 'premium');
    await waitFor('premium queued', () => queued()?.premium === 1);

    // Meanwhile a model with a short queue on the same saturated server: 503 overloaded.
    const tight = stack.client('inference', { maxRetries: 0 });
    await assert.rejects(
      (async () => {
        // pool-tight's only slot is taken by this one ...
        const hold = await tight.chat.completions.create({
          model: 'pool-tight',
          messages: [{ role: 'user', content: 'hold' }],
          max_tokens: 30,
          stream: true,
        });
        try {
          // ... so this one waits 100 ms and gives up.
          await tight.chat.completions.create({
            model: 'pool-tight',
            messages: [{ role: 'user', content: 'no room' }],
            max_tokens: 1,
          });
        } finally {
          for await (const _ of hold) {
            // drain
          }
        }
      })(),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.APIError);
        assert.equal(e.status, 503);
        assert.equal(e.code, 'overloaded');
        assert.ok(Number(e.headers?.get('retry-after')) >= 1);
        return true;
      },
    );
    await Promise.all([holder, c1, p1]);
    assert.ok(order.indexOf('premium') < order.indexOf('community'), `order: ${order.join(' ')}`);
  });

  it('resume: true continues a broken stream on another endpoint as one unbroken stream', async () => {
    resumeA.breakAfterTokens = 5;
    const client = stack.client('inference', { maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'pool-resume',
      messages: [{ role: 'user', content: 'a long answer please' }],
      max_tokens: 12,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(resumeA.breakAfterTokens, null, 'the first endpoint broke the stream');
    assert.equal(resumeB.stats.requests, 1, 'the second endpoint continued it');
    assert.equal(text.split(' ').length, 12, `12 words in one stream: ${text}`);
    assert.equal(finish, 'length');
    const billed = usage?.completion_tokens ?? 0;
    assert.ok(billed >= 10 && billed <= 14, `the whole answer billed once (${billed})`);
  });
});
