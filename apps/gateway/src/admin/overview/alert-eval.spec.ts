import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ALERT_RULES } from '@infer/contracts';
import { parse } from 'yaml';
import { AlertEvaluator, type AlertInputs, breaches } from './alert-eval.js';
import type { InstanceView } from './instances.js';

const inst = (service: string, extra: Partial<InstanceView> = {}): InstanceView => ({
  instance: `${service}@h:1`,
  service,
  version: '1',
  host: 'h',
  inflight: 0,
  load: 0,
  rss: 0,
  uptime_s: 10,
  last_seen_ms: 0,
  state: 'up',
  reason: null,
  checks: {},
  since: 0,
  ...extra,
});

const calm = (): AlertInputs => ({
  requests_per_min: [100, 100, 100, 100, 100, 100],
  server_errors_per_min: [0, 0, 0, 0, 0, 0],
  models: [],
  instances: [inst('gateway'), inst('ledger-writer'), inst('chat-service')],
  queues: [{ name: 'images', counts: { waiting: 3 } }],
  ledger_pending: 0,
});

const durationS = (d: string) => {
  const m = /^(\d+)([smh])$/.exec(d);
  assert.ok(m, d);
  return Number(m[1]) * { s: 1, m: 60, h: 3600 }[m[2] as 's' | 'm' | 'h'];
};

describe('the console evaluates the shipped PrometheusRule', () => {
  it('knows every rule of k8s/components/monitoring/alerts.yaml with its severity, for, summary and threshold', () => {
    const file = parse(readFileSync('k8s/components/monitoring/alerts.yaml', 'utf8')) as {
      spec: {
        groups: Array<{
          rules: Array<{
            alert: string;
            expr: string;
            for: string;
            labels: { severity: string };
            annotations: { summary: string };
          }>;
        }>;
      };
    };
    const rules = file.spec.groups.flatMap((g) => g.rules);
    assert.deepEqual(
      ALERT_RULES.map((r) => r.alert),
      rules.map((r) => r.alert),
    );
    for (const r of rules) {
      const mine = ALERT_RULES.find((x) => x.alert === r.alert);
      assert.ok(mine);
      assert.equal(mine.severity, r.labels.severity, r.alert);
      assert.equal(mine.for_s, durationS(r.for), r.alert);
      assert.equal(mine.summary, r.annotations.summary, r.alert);
      // The first number the expression compares with is the threshold.
      const cmp = /(>|==)\s*([\d.]+)/.exec(r.expr);
      assert.ok(cmp, r.alert);
      assert.equal(mine.threshold, Number(cmp[2]), r.alert);
    }
  });

  it('a calm platform breaches nothing', () => {
    assert.deepEqual(breaches(calm()), []);
  });

  it('5xx over 5 % of the last 5 minutes: InferHighErrorRate; over 10 % of one model: InferModelErrors', () => {
    const x = calm();
    // Minutes older than the window do not count.
    x.server_errors_per_min = [100, 0, 4, 4, 4, 4];
    assert.deepEqual(breaches(x), []);
    x.server_errors_per_min = [0, 0, 7, 7, 7, 7];
    x.models = [
      {
        model: 'chat-A',
        requests_per_min: [0, 0, 10, 10, 10, 10],
        server_errors_per_min: [0, 0, 6, 6, 0, 0],
      },
      {
        model: 'chat-B',
        requests_per_min: [0, 0, 90, 90, 90, 90],
        server_errors_per_min: [0, 0, 0, 0, 6, 6],
      },
    ];
    const found = breaches(x);
    assert.deepEqual(
      found.map((b) => [b.alert, b.labels]),
      [
        ['InferHighErrorRate', {}],
        ['InferModelErrors', { model: 'chat-A' }],
      ],
    );
    assert.equal(found[0]?.value, 28 / 500);
  });

  it('instances: a gateway not ready, a failing readiness check, no ledger writer, a saturated service', () => {
    const x = calm();
    x.instances = [
      inst('gateway', { state: 'degraded', checks: { postgresql: true, redis: false, nats: true } }),
      inst('gateway', { instance: 'gateway@h:2', state: 'down', reason: 'stopped: it shut down cleanly' }),
      // Lost (silent): listed for 15 minutes, long after Kubernetes replaced it; not a not-ready pod.
      inst('gateway', {
        instance: 'gateway@h:3',
        state: 'down',
        reason: 'no status for 20 s: stopped answering',
      }),
      inst('chat-service', { inflight: 150 }),
      inst('chat-service', {
        instance: 'chat-service@h:2',
        inflight: 60,
        checks: { nats: true, engines: false },
      }),
    ];
    x.queues = [{ name: 'images', counts: { waiting: 40, prioritized: 11 } }];
    x.ledger_pending = 10_001;
    assert.deepEqual(
      breaches(x).map((b) => [b.alert, b.labels, b.value]),
      [
        ['InferGatewayNotReady', {}, 1],
        ['InferQueueBacklog', { queue: 'images' }, 51],
        ['InferServiceSaturated', { service: 'chat-service' }, 210],
        ['InferEngineNotReady', { service: 'chat-service', check: 'engines' }, 0],
        ['InferEngineNotReady', { service: 'gateway', check: 'redis' }, 0],
        ['InferLedgerLag', {}, 10_001],
        ['InferLedgerWriterDown', {}, 1],
      ],
    );
  });

  it('no gateway ready and more than one 5xx a second: InferLimitsStoreDown', () => {
    const x = calm();
    x.requests_per_min = [400, 400, 400, 400, 400];
    x.server_errors_per_min = [400, 400, 400, 400, 0];
    assert.ok(!breaches(x).some((b) => b.alert === 'InferLimitsStoreDown'), 'a gateway is ready');
    x.instances = [inst('gateway', { state: 'degraded', checks: { redis: false } }), inst('ledger-writer')];
    assert.ok(breaches(x).some((b) => b.alert === 'InferLimitsStoreDown'));
  });

  it("pending until the expression has held for the rule's for, then firing; resolved when it stops holding", () => {
    let now = 1_000_000;
    const ev = new AlertEvaluator(undefined, () => now);
    const x = calm();
    x.instances = [inst('gateway'), inst('chat-service')];
    let [a] = ev.evaluate(x);
    assert.deepEqual(
      [a?.alert, a?.state, a?.since, a?.severity],
      ['InferLedgerWriterDown', 'pending', now, 'critical'],
    );
    assert.equal(a?.summary, 'No ledger-writer is up; usage events wait in JetStream.');
    now += 299_000;
    assert.equal(ev.evaluate(x)[0]?.state, 'pending');
    now += 1000;
    [a] = ev.evaluate(x);
    assert.deepEqual([a?.state, a?.since], ['firing', 1_300_000]);
    assert.deepEqual(ev.evaluate(calm()), []);
    // Starting again: pending from scratch.
    assert.equal(ev.evaluate(x)[0]?.state, 'pending');
  });

  it('CONSOLE_ALERTS_FOR_S caps every for; summaries fill in their labels', () => {
    const ev = new AlertEvaluator(0, () => 5);
    const x = calm();
    x.queues = [{ name: 'audio-transcriptions', counts: { waiting: 60 } }];
    const [a] = ev.evaluate(x);
    assert.equal(a?.state, 'firing');
    assert.equal(
      a?.summary,
      'More than 50 jobs have waited 10 minutes in audio-transcriptions: workers are not keeping up.',
    );
  });
});
