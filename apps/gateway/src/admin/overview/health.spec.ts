import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Overview } from '@infer/contracts';
import type { InstanceView } from './instances.js';
import { healthOf } from './overview.service.js';

const backing = (over: Partial<Overview['backing'][number]> = {}): Overview['backing'] =>
  (['postgresql', 'redis', 'nats'] as const).map((name) => ({
    name,
    up: true,
    latency_ms: 1,
    reason: null,
    checked_at: 0,
    failing_instances: [],
    ...(name === over.name ? over : {}),
  }));

const inst = (instance: string, service: string, extra: Partial<InstanceView> = {}): InstanceView => ({
  instance,
  service,
  version: '1',
  host: 'h',
  inflight: 0,
  load: 0,
  rss: 0,
  uptime_s: 1,
  last_seen_ms: 0,
  state: 'up',
  reason: null,
  checks: {},
  since: 0,
  ...extra,
});

const alert = (severity: 'critical' | 'warning', state: 'firing' | 'pending' = 'firing') => ({
  alert: severity === 'critical' ? 'InferHighErrorRate' : 'InferQueueBacklog',
  severity,
  state,
  labels: {},
  since: 0,
  value: 1,
  summary: 'S.',
});

describe('is the platform healthy (the overview verdict)', () => {
  it('healthy: every backing server up, every instance up, no alert firing (a pending one is no problem)', () => {
    const h = healthOf(
      backing(),
      [inst('gw', 'gateway'), inst('c', 'chat-service')],
      [alert('warning', 'pending')],
    );
    assert.deepEqual(h, { status: 'healthy', problems: [] });
  });

  it('a stopped instance is no problem while its service has another up; the last one stopped is', () => {
    const stopped = inst('c2', 'chat-service', { state: 'down', reason: 'stopped: it shut down cleanly' });
    assert.equal(healthOf(backing(), [inst('c1', 'chat-service'), stopped], []).status, 'healthy');
    assert.deepEqual(healthOf(backing(), [stopped], []), {
      status: 'down',
      problems: ['No chat-service instance is up.'],
    });
  });

  it('degraded: a lost or degraded instance, an instance that cannot reach a server, a warning firing', () => {
    const lost = inst('c2', 'chat-service', { state: 'down', reason: 'no status for 20 s' });
    assert.deepEqual(healthOf(backing(), [inst('c1', 'chat-service'), lost], []), {
      status: 'degraded',
      problems: ['c2 is down (no status for 20 s).'],
    });
    const bad = inst('c1', 'chat-service', { state: 'degraded', reason: 'not ready: nats failing' });
    assert.deepEqual(
      healthOf(backing({ name: 'nats', failing_instances: ['c1'] }), [bad], [alert('warning')]),
      {
        status: 'degraded',
        problems: [
          '1 instance cannot reach NATS.',
          'c1 is degraded (not ready: nats failing).',
          'InferQueueBacklog is firing: S.',
        ],
      },
    );
  });

  it('down: a backing server unreachable, or a critical alert firing; problems of both kinds listed, worst first', () => {
    const h = healthOf(
      backing({ name: 'redis', up: false, reason: 'no answer within 1 s', latency_ms: null }),
      [inst('c1', 'chat-service', { state: 'degraded', reason: 'not ready: x failing' })],
      [alert('critical')],
    );
    assert.equal(h.status, 'down');
    assert.deepEqual(h.problems, [
      'Redis is unreachable from the gateway: no answer within 1 s.',
      'InferHighErrorRate is firing: S.',
      'c1 is degraded (not ready: x failing).',
    ]);
  });
});
