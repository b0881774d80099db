import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { EnginePoolSchema } from '@infer/contracts';
import { pino } from 'pino';
import { waitFor } from '../../../test/support/wait-for.js';
import { chatAffinityKey } from './affinity.js';
import { addressUrl } from './discovery.js';
import { AffinityKey } from './hash.js';
import { poolMetrics } from './metrics.js';
import { type Endpoint, EndpointFailure, EnginePool, type Lease, type PoolSettings } from './pool.js';
import { FairQueue, type Queued } from './queue.js';
import { type FirstTokenTrace, VllmSimulator } from './testing/vllm-simulator.js';

const settings = (s: Record<string, unknown>): PoolSettings =>
  EnginePoolSchema.parse({ probe_interval_ms: 0, ...s });
const four = [0, 1, 2, 3].map((i) => ({ url: `http://10.0.0.${i}:8000/v1` }));

let seq = 0;
const silentLog = pino({ level: 'silent' });
const pool = (s: Record<string, unknown>, o: Partial<ConstructorParameters<typeof EnginePool>[1]> = {}) =>
  new EnginePool(settings(s), { model: `m${seq++}`, ...o });

describe('affinity keys', () => {
  it('are the same for every later turn of a conversation and differ between conversations', () => {
    const sys = { role: 'system', content: 'You are a helpful assistant. '.repeat(20) };
    const turn1 = [sys, { role: 'user', content: 'Tell me about ships.' }];
    const turn3 = [
      ...turn1,
      { role: 'assistant', content: 'Ships float.' },
      { role: 'user', content: 'And boats?' },
    ];
    const other = [sys, { role: 'user', content: 'Tell me about trains.' }];
    assert.equal(chatAffinityKey(turn1), chatAffinityKey(turn3));
    assert.notEqual(chatAffinityKey(turn1), chatAffinityKey(other));
    // Text parts read like a string; tool names count.
    assert.equal(
      chatAffinityKey([sys, { role: 'user', content: [{ type: 'text', text: 'Tell me about ships.' }] }]),
      chatAffinityKey(turn1),
    );
    assert.notEqual(chatAffinityKey(turn1, [{ function: { name: 'search' } }]), chatAffinityKey(turn1));
  });

  it('are deterministic (fixed values: every service replica computes the same)', () => {
    assert.equal(new AffinityKey().add('abc').value(), new AffinityKey().add('abc').value());
    assert.equal(new AffinityKey().add('abc').value(), 2417494051);
    // The split between parts matters.
    assert.notEqual(
      new AffinityKey().add('ab').add('c').value(),
      new AffinityKey().add('a').add('bc').value(),
    );
  });

  it('read a bounded prefix of long documents', () => {
    const doc = 'x'.repeat(100_000);
    assert.equal(
      chatAffinityKey([{ role: 'user', content: `${doc}A` }]),
      chatAffinityKey([{ role: 'user', content: `${doc}A` }]),
    );
    // Same length, same leading blocks: one key (they share that prefix cache anyway).
    assert.equal(
      chatAffinityKey([{ role: 'user', content: `${doc}A` }]),
      chatAffinityKey([{ role: 'user', content: `${doc}B` }]),
    );
  });
});

describe('routing', () => {
  it('prefix_affinity: a key goes to the same endpoint in two pools with the same endpoints (in any order)', () => {
    const a = pool({ endpoints: four });
    const b = pool({ endpoints: [...four].reverse() });
    let spread = new Set<string>();
    for (let k = 0; k < 200; k++) {
      const key = new AffinityKey().add(`conversation ${k}`).value();
      const ea = a.pick({ key }, 0) as Endpoint;
      const eb = b.pick({ key }, 0) as Endpoint;
      assert.equal(ea.url, eb.url);
      spread.add(ea.url);
    }
    assert.equal(spread.size, 4, 'keys spread over every endpoint');
    // Removing one endpoint moves only the keys it had.
    const c = pool({ endpoints: four.slice(0, 3) });
    let moved = 0;
    spread = new Set();
    for (let k = 0; k < 400; k++) {
      const key = new AffinityKey().add(`conversation ${k}`).value();
      const before = (a.pick({ key }, 0) as Endpoint).url;
      const after = (c.pick({ key }, 0) as Endpoint).url;
      if (before !== after) {
        moved++;
        assert.equal(before, four[3]?.url);
      }
    }
    assert.ok(moved > 50 && moved < 200, `about a quarter of the keys moved (${moved})`);
  });

  it('prefix_affinity: bounded load sends a hot key elsewhere past c x the fair share', async () => {
    // Cap 100: slack ceil(sqrt(100)) = 10 requests over the fair share.
    const p = pool({ endpoints: four, max_inflight_per_endpoint: 100 });
    const key = 12345;
    const leases: Lease[] = [];
    for (let i = 0; i < 200; i++) leases.push(await p.acquire({ key }));
    const per = new Map<string, number>();
    for (const l of leases) per.set(l.endpoint.url, (per.get(l.endpoint.url) ?? 0) + 1);
    const max = Math.max(...per.values());
    // At 200 in flight the relative bound rules: none above ceil(1.25 x 200 / 4) = 63 (50 + 10 is less).
    assert.ok(max <= 63, `hot endpoint held ${max}`);
    assert.equal(per.size, 4);
    assert.equal(p.status().affinity_spills, 200 - (per.get(leases[0]?.endpoint.url ?? '') ?? 0));
    for (const l of leases) l.release('ok');
  });

  it('prefix_affinity: a few requests over the fair share do not move a key off its endpoint', async () => {
    // 40 in flight over 4 endpoints of cap 64 (slack 8): 1.25 x 10 = 13 would move this key's 14th
    // request; the slack keeps it home up to 10 + 8 = 18, then the next endpoint on the ring takes it.
    const p = pool({ endpoints: four, max_inflight_per_endpoint: 64 });
    const key = 777;
    const home = (p.pick({ key }, 0) as Endpoint).url;
    const others: Lease[] = [];
    for (let k = 0; others.length < 26; k++) {
      const l = await p.acquire({ key: new AffinityKey().add(`other ${k}`).value() });
      if (l.endpoint.url === home) l.release('ok');
      else others.push(l);
    }
    const mine: Lease[] = [];
    for (let i = 0; i < 14; i++) mine.push(await p.acquire({ key }));
    assert.deepEqual(new Set(mine.map((l) => l.endpoint.url)), new Set([home]));
    assert.equal(p.status().affinity_spills, 0);
    for (let i = 0; i < 8; i++) mine.push(await p.acquire({ key }));
    const away = mine.filter((l) => l.endpoint.url !== home).length;
    assert.ok(away > 0 && away < 8, `past the bound some go elsewhere (${away})`);
    assert.equal(p.status().affinity_spills, away);
    for (const l of [...others, ...mine]) l.release('ok');
  });

  it('round_robin follows the weights', () => {
    const p = pool({
      routing: 'round_robin',
      endpoints: [{ url: 'http://a:1', weight: 2 }, { url: 'http://b:1' }],
    });
    const got = Array.from({ length: 6 }, () => (p.tryAcquire({}) as Lease).endpoint.url);
    assert.deepEqual(
      got.filter((u) => u === 'http://a:1').length,
      4,
      `weight 2 takes two thirds: ${got.join(' ')}`,
    );
  });

  it('least_loaded picks the less loaded of two choices and never a saturated one', async () => {
    const p = pool({ routing: 'least_loaded', endpoints: four, max_inflight_per_endpoint: 2 });
    const leases: Lease[] = [];
    for (let i = 0; i < 8; i++) leases.push(await p.acquire({}));
    const per = new Map<string, number>();
    for (const l of leases) per.set(l.endpoint.url, (per.get(l.endpoint.url) ?? 0) + 1);
    assert.deepEqual([...per.values()], [2, 2, 2, 2]);
    assert.equal(p.tryAcquire({}), null);
    for (const l of leases) l.release('ok');
  });

  it('a single base_url is a pool of one', async () => {
    const p = pool({ base_url: 'http://vllm:8000/v1/' });
    const l = await p.acquire({ key: 1 });
    assert.equal(l.endpoint.origin, 'http://vllm:8000');
    assert.equal(l.endpoint.path, '/v1');
    l.release('ok');
  });
});

describe('health', () => {
  it('a failure cools an endpoint down, with backoff; it comes back after a probe, gradually', async () => {
    let healthy = false;
    const p = pool(
      { endpoints: four.slice(0, 2), max_inflight_per_endpoint: 10, probe_interval_ms: 60_000 },
      { cooldownMs: 30, probe: async () => healthy, warmupMs: 1_000 },
    );
    const [a] = p.list() as Endpoint[];
    const l = (await p.acquire({ key: 1, exclude: new Set([p.list()[1] as Endpoint]) })) as Lease;
    assert.equal(l.endpoint, a);
    l.release('connect');
    assert.equal(a?.state, 'cooling');
    // Cooling: every request goes to the other one.
    for (let i = 0; i < 5; i++) {
      const x = p.tryAcquire({ key: i }) as Lease;
      assert.notEqual(x.endpoint, a);
      x.release('ok');
    }
    // The probe fails at the end of the first cooldown: a second, longer one.
    await waitFor('a second cooldown', () => (a?.fails ?? 0) >= 2);
    assert.equal(a?.state, 'cooling');
    healthy = true;
    await waitFor('recovery', () => a?.state !== 'cooling');
    assert.equal(a?.state, 'recovering');
    const early = p.status().endpoints[0]?.capacity ?? 0;
    assert.ok(early >= 1 && early < 10, `recovering: a share of its slots at first (${early})`);
    await waitFor('full capacity', () => p.status().endpoints[0]?.capacity === 10 && a?.state === 'up');
    assert.equal(p.status().endpoints[0]?.capacity, 10);
    await p.close();
  });

  it('all endpoints down: 503 service_unavailable at once', async () => {
    const p = pool({ endpoints: four.slice(0, 1) }, { cooldownMs: 60_000 });
    (await p.acquire({})).release('connect');
    await assert.rejects(
      p.acquire({}),
      (e: { status: number; code: string; headers: Record<string, string> }) => {
        assert.equal(e.status, 503);
        assert.equal(e.code, 'service_unavailable');
        assert.ok(Number(e.headers['retry-after']) >= 1);
        return true;
      },
    );
    await p.close();
  });

  it('call() retries a failed endpoint on another one, then gives the last error', async () => {
    const p = pool({ endpoints: four, retries: 2 }, { cooldownMs: 60_000 });
    const seen: string[] = [];
    const v = await p.call({ key: 7 }, async (e, attempt) => {
      seen.push(e.url);
      if (attempt < 2) throw new EndpointFailure('connect', new Error('refused'));
      return 'answer';
    });
    assert.equal(v, 'answer');
    assert.equal(new Set(seen).size, 3, 'three different endpoints');
    const boom = new Error('every one failed');
    await assert.rejects(
      p.call({ key: 8 }, async () => {
        throw new EndpointFailure('status_5xx', boom);
      }),
      (e) => e === boom,
    );
    // Request errors are not retried and leave the endpoint up.
    const p2 = pool({ endpoints: four, retries: 2 });
    let calls = 0;
    await assert.rejects(
      p2.call({ key: 9 }, async () => {
        calls++;
        throw new Error('bad input');
      }),
    );
    assert.equal(calls, 1);
    assert.ok(p2.list().every((e) => e.state === 'up'));
    await Promise.all([p.close(), p2.close()]);
  });
});

describe('queue', () => {
  it('orders waiting requests by class, then members of a class take turns', () => {
    const q = new FairQueue<Queued & { id: string }>();
    const add = (cls: Queued['cls'], member: string, id: string) => q.push({ cls, member, id, gone: false });
    add('batch', 'm1', 'b1');
    add('community', 'alice', 'a1');
    add('community', 'alice', 'a2');
    add('community', 'alice', 'a3');
    add('community', 'bob', 'b1c');
    add('premium', 'carol', 'p1');
    add('inference', 'dave', 'i1');
    const order: string[] = [];
    for (let x = q.shift(); x; x = q.shift()) order.push(x.id);
    assert.deepEqual(order, ['p1', 'i1', 'a1', 'b1c', 'a2', 'a3', 'b1']);
    assert.equal(q.size, 0);
  });

  it('saturated: waits, is served in class order, and times out with 503 overloaded + Retry-After', async () => {
    const p = pool({ endpoints: four.slice(0, 1), max_inflight_per_endpoint: 1, queue_timeout_ms: 2_000 });
    const held = await p.acquire({});
    const order: string[] = [];
    const waiting = (['community', 'batch', 'premium', 'inference'] as const).map((cls) =>
      p.acquire({ cls, member: cls }).then((l) => {
        order.push(cls);
        l.release('ok');
      }),
    );
    assert.deepEqual(p.status().queued, { premium: 1, inference: 1, community: 1, batch: 1 });
    held.release('ok');
    await Promise.all(waiting);
    assert.deepEqual(order, ['premium', 'inference', 'community', 'batch']);

    const p2 = pool({ endpoints: four.slice(0, 1), max_inflight_per_endpoint: 1, queue_timeout_ms: 50 });
    const h2 = await p2.acquire({});
    await assert.rejects(
      p2.acquire({}),
      (e: { status: number; code: string; headers: Record<string, string> }) => {
        assert.equal(e.status, 503);
        assert.equal(e.code, 'overloaded');
        assert.equal(e.headers['retry-after'], '1');
        return true;
      },
    );
    h2.release('ok');
    // A caller that leaves stops waiting.
    const h3 = await p2.acquire({});
    const ac = new AbortController();
    const gone = p2.acquire({ signal: ac.signal });
    ac.abort(new Error('left'));
    await assert.rejects(gone, /left/);
    assert.equal(p2.status().queued.community, 0);
    h3.release('ok');
    await Promise.all([p.close(), p2.close()]);
  });
});

describe('discovery', () => {
  it('reads A/AAAA records, follows changes, keeps the last list when a lookup fails', async () => {
    let answer: string[] | Error = ['10.1.0.2', '10.1.0.1'];
    const lookups: string[] = [];
    const p = pool(
      { discovery: { dns: 'vllm.infer.svc.cluster.local', port: 8000, path: '/v1', refresh_s: 1 } },
      {
        resolver: async (host) => {
          lookups.push(host);
          if (answer instanceof Error) throw answer;
          return answer;
        },
      },
    );
    const l = await p.acquire({ key: 1 });
    assert.match(l.endpoint.url, /^http:\/\/10\.1\.0\.[12]:8000\/v1$/);
    l.release('ok');
    assert.deepEqual(
      p
        .list()
        .map((e) => e.url)
        .sort(),
      ['http://10.1.0.1:8000/v1', 'http://10.1.0.2:8000/v1'],
    );
    const kept = p.list().find((e) => e.url.includes('10.1.0.1'));
    answer = ['10.1.0.1', 'fd00::3'];
    await p.refresh();
    assert.deepEqual(
      p
        .list()
        .map((e) => e.url)
        .sort(),
      ['http://10.1.0.1:8000/v1', 'http://[fd00::3]:8000/v1'],
    );
    assert.equal(
      p.list().find((e) => e.url.includes('10.1.0.1')),
      kept,
      'an endpoint that stays keeps its state',
    );
    answer = new Error('SERVFAIL');
    await p.refresh();
    assert.equal(p.list().length, 2);
    answer = [];
    await p.refresh();
    assert.equal(p.list().length, 2);
    assert.ok(lookups.every((h) => h === 'vllm.infer.svc.cluster.local'));
    await p.close();
  });

  it('builds URLs for both address families', () => {
    assert.equal(addressUrl('http', '10.0.0.1', 80, 'v1/'), 'http://10.0.0.1:80/v1');
    assert.equal(addressUrl('https', '::1', 8443, ''), 'https://[::1]:8443');
  });
});

describe('operators', () => {
  it('every service ops server answers GET /status/engine-pools with the live pools', async () => {
    const { OpsServer } = await import('@infer/runtime');
    const p = pool({ endpoints: four.slice(0, 2) }, { cooldownMs: 60_000 });
    (await p.acquire({})).release('connect');
    const ops = new OpsServer({ service: 't', port: 0, host: '127.0.0.1', log: silentLog });
    const base = await ops.start();
    try {
      const body = (await (await fetch(`${base}/status/engine-pools`)).json()) as {
        pools: Array<{ model: string; endpoints: Array<{ state: string; last_error: string | null }> }>;
      };
      const mine = body.pools.find((x) => x.model === p.model);
      assert.ok(mine);
      assert.deepEqual(mine.endpoints.map((e) => e.state).sort(), ['cooling', 'up']);
      assert.equal(mine.endpoints.find((e) => e.state === 'cooling')?.last_error, 'connect');
    } finally {
      await ops.close();
      await p.close();
    }
  });

  it("serves the pools' Prometheus metrics on the ops server's /metrics", async () => {
    const { OpsServer } = await import('@infer/runtime');
    const p = pool({ endpoints: four.slice(0, 2), max_inflight_per_endpoint: 1 }, { cooldownMs: 60_000 });
    const failed = await p.acquire({});
    const held = await p.acquire({});
    const waiting = p.acquire({ cls: 'premium', member: 'a' });
    failed.release('connect'); // cools its endpoint: the waiter gets the other one when it is free
    held.release('ok');
    const third = await waiting;
    const ops = new OpsServer({ service: 't', port: 0, host: '127.0.0.1', log: silentLog });
    const base = await ops.start();
    try {
      const text = await (await fetch(`${base}/metrics`)).text();
      const line = (name: string, ...labels: string[]) =>
        text
          .split('\n')
          .find((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)) && l.includes(p.model));
      const cooled = failed.endpoint.url;
      const other = held.endpoint.url;
      assert.equal(third.endpoint.url, other);
      assert.match(line('infer_engine_endpoint_inflight', `endpoint="${other}"`) ?? '', / 1$/);
      assert.match(
        line('infer_engine_endpoint_requests_total', `endpoint="${other}"`, 'outcome="ok"') ?? '',
        / 1$/,
      );
      assert.match(line('infer_engine_endpoint_state', `endpoint="${cooled}"`) ?? '', / 0$/);
      assert.match(line('infer_engine_endpoint_state', `endpoint="${other}"`) ?? '', / 1$/);
      assert.match(
        line('infer_engine_endpoint_requests_total', `endpoint="${cooled}"`, 'outcome="connect"') ?? '',
        / 1$/,
      );
      assert.match(line('infer_engine_endpoint_cooldowns_total', `endpoint="${cooled}"`) ?? '', / 1$/);
      assert.match(line('infer_engine_pool_queue_wait_seconds_count', 'class="premium"') ?? '', / 1$/);
      assert.match(line('infer_engine_pool_queue_depth') ?? '', / 0$/);
    } finally {
      third.release('ok');
      await ops.close();
      await p.close();
    }
  });
});

describe("engine metrics (the engines' own /metrics)", () => {
  it('shows the prefix-cache hit rate a vLLM endpoint reports; an endpoint without /metrics stays up, not reported', async () => {
    const sim = new VllmSimulator({ name: 'sim', timeScale: 0.05 });
    await sim.start();
    // A server with a health check and nothing else (every other path 404), like an engine without metrics.
    const plain = createServer((req, res) => {
      res.writeHead(req.url === '/health' ? 200 : 404).end();
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', () => r()));
    const plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}/v1`;
    const p = pool(
      { endpoints: [{ url: sim.url }, { url: plainUrl }], probe_interval_ms: 50, health_path: '/health' },
      { defaultMetricsPath: '/metrics', log: silentLog },
    );
    const of = (url: string) => p.status().endpoints.find((e) => e.url === url);
    try {
      // A first reading before any traffic (counters at 0).
      await waitFor('a first reading of the simulator', () => of(sim.url)?.metrics_at);
      assert.equal(of(sim.url)?.cache_hit_rate, null, 'no lookups yet: no rate');
      assert.equal(of(sim.url)?.requests_waiting, 0);
      const system = 'You are a careful assistant who answers in short sentences. '.repeat(8);
      const firsts: FirstTokenTrace[] = [];
      sim.onFirstToken = (t) => firsts.push(t);
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${sim.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'sim',
            max_tokens: 2,
            messages: [
              { role: 'system', content: system },
              { role: 'user', content: `question ${i}` },
            ],
          }),
        });
        assert.equal(res.status, 200);
        await res.json();
      }
      // The simulator's own ratio over the window (all its traffic is in it).
      const expected = sim.stats.hitTokens / sim.stats.promptTokens;
      assert.ok(expected > 0, 'the shared system prompt is served from cache after the first request');
      // Each sequence's first token is reported with what it found cached (bench/routing.ts --tail).
      assert.deepEqual(
        firsts.map((t) => t.cachedTokens > 0),
        [false, true, true, true],
      );
      assert.equal(
        firsts.reduce((n, t) => n + t.cachedTokens, 0),
        sim.stats.hitTokens,
      );
      assert.ok(firsts.every((t) => t.prompt.includes('question') && t.first >= t.arrived));
      // (A reading taken while the last request still ran has the final counters and 1 running.)
      const shown = await waitFor('the pool showing the simulator’s hit rate, idle', () => {
        const e = of(sim.url);
        return e?.cache_hit_rate === expected && e.requests_running === 0 ? e : undefined;
      });
      assert.equal(shown.requests_waiting, 0);
      assert.ok((shown.kv_cache_usage ?? 0) > 0 && (shown.kv_cache_usage ?? 0) <= 1);
      const [simEp, plainEp] = p.list() as Endpoint[];
      // The endpoint without /metrics: read (and failed) at least once, still up, never an error.
      await waitFor('the plain endpoint read', () => plainEp?.scrapeLogged);
      const bare = of(plainUrl);
      assert.equal(bare?.state, 'up');
      assert.equal(bare?.errors, 0);
      assert.deepEqual(
        [
          bare?.cache_hit_rate,
          bare?.kv_cache_usage,
          bare?.requests_waiting,
          bare?.requests_running,
          bare?.metrics_at,
        ],
        [null, null, null, null, null],
      );
      // The pool's Prometheus gauges: the reported endpoint has them, the other none.
      const gauge = async (g: typeof poolMetrics.cacheHitRate, url: string) =>
        (await g.get()).values.find((v) => v.labels.model === p.model && v.labels.endpoint === url)?.value;
      assert.equal(await gauge(poolMetrics.cacheHitRate, simEp?.url ?? ''), expected);
      assert.equal(await gauge(poolMetrics.engineWaiting, simEp?.url ?? ''), 0);
      assert.equal(await gauge(poolMetrics.cacheHitRate, plainUrl), undefined);
    } finally {
      await p.close();
      await sim.kill();
      await new Promise<void>((r) => plain.close(() => r()));
    }
  });

  it('reads nothing where the engine has no metrics path (other engines), and nothing with metrics_path ""', async () => {
    const sim = new VllmSimulator({ name: 'sim2', timeScale: 0.05 });
    await sim.start();
    const off = pool(
      { endpoints: [{ url: sim.url }], probe_interval_ms: 20, health_path: '/health', metrics_path: '' },
      { defaultMetricsPath: '/metrics' },
    );
    const other = pool({ endpoints: [{ url: sim.url }], probe_interval_ms: 20, health_path: '/health' });
    const on = pool({
      endpoints: [{ url: sim.url }],
      probe_interval_ms: 20,
      health_path: '',
      metrics_path: '/metrics',
    });
    try {
      assert.equal(off.metricsPath, '');
      assert.equal(other.metricsPath, '');
      // Metrics without health probes: the timer runs for the metrics alone.
      await waitFor('a reading without probes', () => on.status().endpoints[0]?.metrics_at);
      assert.equal(off.status().endpoints[0]?.metrics_at, null);
      assert.equal(other.status().endpoints[0]?.metrics_at, null);
    } finally {
      await Promise.all([off.close(), other.close(), on.close()]);
      await sim.kill();
    }
  });
});
