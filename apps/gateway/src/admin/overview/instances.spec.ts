import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InstanceRegistry, LOST_KEEP_MS, STOPPED_KEEP_MS } from './instances.js';

const status = (instance: string, service: string, at: number, extra: Record<string, unknown> = {}) => ({
  instance,
  service,
  version: '1.2.3',
  host: 'h',
  pid: 1,
  inflight: 2,
  load: 0.5,
  rss: 1000,
  started_at: at - 60_000,
  at,
  interval_ms: 5000,
  ...extra,
});

describe('instance registry', () => {
  it('keeps the latest status per instance and ignores junk', () => {
    let now = 1_000_000;
    const r = new InstanceRegistry(() => now);
    assert.equal(r.receive({ instance: 'x' }), false);
    assert.equal(r.receive('nope'), false);
    assert.equal(r.receive(status('chat@a:1', 'chat-service', now)), true);
    assert.equal(r.receive(status('gw@a:2', 'gateway', now)), true);
    now += 10_000;
    r.receive({ ...status('gw@a:2', 'gateway', now), inflight: 7 });
    const list = r.list();
    assert.deepEqual(
      list.map((i) => [i.service, i.inflight, i.version, i.uptime_s, i.state]),
      [
        ['chat-service', 2, '1.2.3', 60, 'up'],
        ['gateway', 7, '1.2.3', 60, 'up'],
      ],
    );
    assert.equal(list[0]?.last_seen_ms, 10_000);
  });

  it('an instance silent for 3 intervals is down (lost) with when it was last seen, then forgotten', () => {
    let now = 1_000_000;
    const r = new InstanceRegistry(() => now);
    r.receive(status('chat@a:1', 'chat-service', now));
    now += 16_000; // 16 s silent > 3 x 5 s
    const [chat] = r.list();
    assert.equal(chat?.state, 'down');
    assert.match(chat?.reason ?? '', /^no status for 16 s: stopped answering/);
    assert.equal(chat?.since, 1_000_000);
    now += LOST_KEEP_MS;
    assert.deepEqual(r.list(), []);
  });

  it('not ready: degraded, with the failing checks and since when; ready again: up', () => {
    let now = 1_000_000;
    const r = new InstanceRegistry(() => now);
    r.receive(
      status('chat@a:1', 'chat-service', now, { ready: true, checks: { nats: true, engines: true } }),
    );
    now += 5000;
    r.receive(
      status('chat@a:1', 'chat-service', now, { ready: false, checks: { nats: true, engines: false } }),
    );
    now += 5000;
    r.receive(
      status('chat@a:1', 'chat-service', now, { ready: false, checks: { nats: true, engines: false } }),
    );
    const [c] = r.list();
    assert.deepEqual([c?.state, c?.reason, c?.since], ['degraded', 'not ready: engines failing', 1_005_000]);
    assert.deepEqual(c?.checks, { nats: true, engines: false });
    now += 5000;
    r.receive(
      status('chat@a:1', 'chat-service', now, { ready: true, checks: { nats: true, engines: true } }),
    );
    assert.deepEqual([r.list()[0]?.state, r.list()[0]?.reason], ['up', null]);
  });

  it('a last message marked stopping: down (stopped) at once, forgotten after a while', () => {
    let now = 1_000_000;
    const r = new InstanceRegistry(() => now);
    r.receive(status('emb@a:1', 'embedding-service', now, { ready: true, checks: {} }));
    now += 1000;
    r.receive(status('emb@a:1', 'embedding-service', now, { ready: true, stopping: true }));
    const [e] = r.list();
    assert.deepEqual([e?.state, e?.reason, e?.since], ['down', 'stopped: it shut down cleanly', 1_001_000]);
    now += STOPPED_KEEP_MS + 1;
    assert.deepEqual(r.list(), []);
  });
});
