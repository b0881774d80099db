import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergePools } from './pools.js';

const ep = (url: string, over: Record<string, unknown> = {}) => ({
  url,
  weight: 1,
  state: 'up',
  inflight: 0,
  capacity: 8,
  consecutive_failures: 0,
  cooldown_until: null,
  requests: 0,
  errors: 0,
  last_error: null,
  last_error_at: null,
  cache_hit_rate: null,
  kv_cache_usage: null,
  requests_waiting: null,
  requests_running: null,
  metrics_at: null,
  ...over,
});
/** What an engine reported on its /metrics, read by a replica at `at`. */
const read = (at: string, hit: number, waiting: number) => ({
  cache_hit_rate: hit,
  kv_cache_usage: 0.5,
  requests_waiting: waiting,
  requests_running: 4,
  metrics_at: at,
});
const replica = (instance: string, pools: unknown[]) => ({
  instance,
  process: `host:${instance}`,
  service: 'chat',
  status: { pools },
});
const pool = (model: string, endpoints: unknown[], queued = {}) => ({
  model,
  routing: 'least_inflight',
  source: 'static',
  max_inflight_per_endpoint: 8,
  queued,
  affinity_spills: 0,
  endpoints,
});

describe('mergePools', () => {
  it('sums load and counts, keeps the worst state, the latest cooldown and the newest error', () => {
    const out = mergePools([
      replica('chat@a', [
        pool(
          'm',
          [
            ep('http://e2', {
              state: 'cooling',
              inflight: 0,
              consecutive_failures: 3,
              cooldown_until: '2026-01-01T00:00:10.000Z',
              requests: 5,
              errors: 3,
              last_error: 'connect ECONNREFUSED',
              last_error_at: '2026-01-01T00:00:05.000Z',
            }),
            ep('http://e1', { inflight: 2, requests: 10, ...read('2026-01-01T00:00:09.000Z', 0.75, 1) }),
          ],
          { interactive: 1, batch: 2 },
        ),
      ]),
      replica('chat@b', [
        pool('m', [
          ep('http://e1', {
            inflight: 3,
            requests: 7,
            errors: 1,
            last_error: 'HTTP 500',
            last_error_at: '2026-01-01T00:00:01.000Z',
            ...read('2026-01-01T00:00:08.000Z', 0.5, 2),
          }),
          ep('http://e2', {
            state: 'recovering',
            consecutive_failures: 1,
            cooldown_until: '2026-01-01T00:00:20.000Z',
            requests: 4,
            errors: 1,
            last_error: 'older',
            last_error_at: '2026-01-01T00:00:02.000Z',
            // Read by this replica only (the other one's reading failed: not reported there).
            ...read('2026-01-01T00:00:03.000Z', 0.25, 0),
          }),
        ]),
        pool('a-model', [ep('http://x')]),
      ]),
    ]);
    assert.equal(out.replicas, 2);
    assert.deepEqual(
      out.data.map((d) => d.model),
      ['a-model', 'm'],
    );
    const m = out.data[1];
    assert.equal(m?.queued, 3);
    assert.deepEqual(m?.endpoints, [
      {
        url: 'http://e1',
        state: 'up',
        inflight: 5,
        capacity: 16,
        consecutive_failures: 0,
        cooldown_until: null,
        requests: 17,
        errors: 1,
        last_error: 'HTTP 500',
        last_error_at: '2026-01-01T00:00:01.000Z',
        // The newest reading of the engine (replica a's, at :09).
        ...read('2026-01-01T00:00:09.000Z', 0.75, 1),
        replicas: 2,
      },
      {
        url: 'http://e2',
        state: 'cooling',
        inflight: 0,
        capacity: 16,
        consecutive_failures: 3,
        cooldown_until: '2026-01-01T00:00:20.000Z',
        requests: 9,
        errors: 4,
        last_error: 'connect ECONNREFUSED',
        last_error_at: '2026-01-01T00:00:05.000Z',
        ...read('2026-01-01T00:00:03.000Z', 0.25, 0),
        replicas: 2,
      },
    ]);
  });

  it('ignores replies that hold no pools document', () => {
    const out = mergePools([
      { instance: 'x', process: 'h:1', service: 's', status: null },
      { instance: 'y', process: 'h:2', service: 's', status: { pools: [{ nope: 1 }] } },
    ]);
    assert.deepEqual(out, { object: 'list', replicas: 0, data: [] });
  });

  it('counts one process once however many of its services answer', () => {
    const doc = { pools: [pool('m', [ep('http://e1', { inflight: 2, requests: 3 })])] };
    const out = mergePools([
      { instance: 'chat@h:1:a', process: 'h:1', service: 'chat', status: doc },
      { instance: 'gateway@h:1:b', process: 'h:1', service: 'gateway', status: doc },
      { instance: 'chat@h:2:c', process: 'h:2', service: 'chat', status: doc },
    ]);
    assert.equal(out.replicas, 2);
    const e = out.data[0]?.endpoints[0];
    assert.deepEqual([e?.inflight, e?.requests, e?.replicas], [4, 6, 2]);
    assert.equal(e?.cache_hit_rate, null);
  });

  it('reads a document without the engine fields (an older replica) or with bad ones as not reported', () => {
    const bare = { url: 'http://e1', state: 'up', inflight: 1, capacity: 8, requests: 1, errors: 0 };
    const out = mergePools([
      replica('chat@a', [pool('m', [bare])]),
      replica('chat@b', [pool('m', [ep('http://e1', { ...read('2026-01-01T00:00:01.000Z', 7, -3) })])]),
    ]);
    const e = out.data[0]?.endpoints[0];
    assert.deepEqual(
      [e?.cache_hit_rate, e?.kv_cache_usage, e?.requests_waiting, e?.requests_running, e?.metrics_at],
      [1, 0.5, 0, 4, '2026-01-01T00:00:01.000Z'],
    );
    const alone = mergePools([replica('chat@a', [pool('m', [bare])])]).data[0]?.endpoints[0];
    assert.deepEqual(
      [alone?.cache_hit_rate, alone?.kv_cache_usage, alone?.requests_waiting, alone?.metrics_at],
      [null, null, null, null],
    );
  });
});
