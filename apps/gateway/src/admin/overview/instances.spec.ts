import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InstanceRegistry } from './instances.js';

const status = (instance: string, service: string, at: number) => ({
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
});

describe('instance registry', () => {
  it('keeps the latest status per instance, ignores junk and forgets instances silent for 3 intervals', () => {
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
      list.map((i) => [i.service, i.inflight, i.version, i.uptime_s]),
      [
        ['chat-service', 2, '1.2.3', 60],
        ['gateway', 7, '1.2.3', 60],
      ],
    );
    assert.equal(list[0]?.last_seen_ms, 10_000);
    now += 6_000; // chat: 16 s silent > 3 x 5 s
    assert.deepEqual(
      r.list().map((i) => i.service),
      ['gateway'],
    );
  });
});
