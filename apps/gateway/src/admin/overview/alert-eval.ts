import { ALERT_RULES, type AlertRuleInfo } from '@infer/contracts';
import type { InstanceView } from './instances.js';

/** What the console sees of the platform at one moment: the inputs of the rules it evaluates. */
export interface AlertInputs {
  /** The last minutes, oldest first, the current (partial) one last; all replicas' traffic. */
  requests_per_min: readonly number[];
  server_errors_per_min: readonly number[];
  models: ReadonlyArray<{
    model: string;
    requests_per_min: readonly number[];
    server_errors_per_min: readonly number[];
  }>;
  instances: readonly InstanceView[];
  queues: ReadonlyArray<{ name: string; counts: Record<string, number> }>;
  /** The ledger consumer's num_pending; null when JetStream did not say. */
  ledger_pending: number | null;
}

/** One series of a rule whose expression holds now. */
export interface Breach {
  alert: string;
  labels: Record<string, string>;
  value: number;
}

export interface AlertView {
  alert: string;
  severity: 'critical' | 'warning';
  state: 'firing' | 'pending';
  labels: Record<string, string>;
  /** Unix ms since when the expression has held (pending) or since the alert fires (firing). */
  since: number;
  value: number | null;
  summary: string;
}

/** The rate windows of the rule file (`[5m]`): the current minute so far and the 4 before it. */
const WINDOW_MIN = 5;
const sumLast = (xs: readonly number[], n: number) => xs.slice(-n).reduce((a, b) => a + b, 0);
const ratio = (num: number, den: number) => num / Math.max(den, 1e-9);

/**
 * The rule file's expressions over AlertInputs (the rules marked `evaluated` in ALERT_RULES; the
 * others need Prometheus). Each mirrors its PromQL; where the console's figures differ from the
 * metric the rule reads, the ADR (0111) says how.
 */
export function breaches(x: AlertInputs): Breach[] {
  const out: Breach[] = [];
  const requests5 = sumLast(x.requests_per_min, WINDOW_MIN);
  const server5 = sumLast(x.server_errors_per_min, WINDOW_MIN);
  // sum(rate(5xx[5m])) / clamp_min(sum(rate(all[5m])), 1e-9) > 0.05
  const errRate = ratio(server5, requests5);
  if (errRate > 0.05) out.push({ alert: 'InferHighErrorRate', labels: {}, value: errRate });
  const gateways = x.instances.filter((i) => i.service === 'gateway');
  // 503/s over 5 min > 1 and no gateway ready (kube_pod_status_ready: the status messages' readiness).
  const serverPerS = server5 / (WINDOW_MIN * 60);
  if (serverPerS > 1 && !gateways.some((g) => g.state === 'up'))
    out.push({ alert: 'InferLimitsStoreDown', labels: {}, value: serverPerS });
  // sum(kube_pod_status_ready{condition="false"}) > 0: a replica that answers but is not ready. One
  // that went silent is not counted: it stays listed (down) for 15 minutes, long after Kubernetes has
  // restarted or replaced it; the overview's verdict names it.
  const notReady = gateways.filter((g) => g.state === 'degraded').length;
  if (notReady > 0) out.push({ alert: 'InferGatewayNotReady', labels: {}, value: notReady });
  // sum by (queue) (infer_bullmq_queue_jobs{state=~"waiting|prioritized"}) > 50
  for (const q of x.queues) {
    const n = (q.counts.waiting ?? 0) + (q.counts.prioritized ?? 0);
    if (n > 50) out.push({ alert: 'InferQueueBacklog', labels: { queue: q.name }, value: n });
  }
  // sum by (service) (infer_rpc_inflight) > 200: the NATS services' RPC in flight (not the gateways').
  const inflight = new Map<string, number>();
  for (const i of x.instances)
    if (i.service !== 'gateway' && i.state !== 'down')
      inflight.set(i.service, (inflight.get(i.service) ?? 0) + i.inflight);
  for (const [service, n] of inflight)
    if (n > 200) out.push({ alert: 'InferServiceSaturated', labels: { service }, value: n });
  // per model: errors / requests over 5 min > 0.1 (the gateway's 5xx per model: a service's error
  // frame reaches the client as a 5xx).
  for (const m of x.models) {
    const req = sumLast(m.requests_per_min, WINDOW_MIN);
    const r = ratio(sumLast(m.server_errors_per_min, WINDOW_MIN), req);
    if (req > 0 && r > 0.1) out.push({ alert: 'InferModelErrors', labels: { model: m.model }, value: r });
  }
  // min by (service, check) (infer_ready_check) == 0
  const failing = new Set<string>();
  for (const i of x.instances) {
    if (i.state === 'down') continue;
    for (const [check, ok] of Object.entries(i.checks)) if (!ok) failing.add(`${i.service}\u0000${check}`);
  }
  for (const k of [...failing].sort()) {
    const [service = '', check = ''] = k.split('\u0000');
    out.push({ alert: 'InferEngineNotReady', labels: { service, check }, value: 0 });
  }
  // max(nats_consumer_num_pending{consumer_name="ledger-writer"}) > 10000
  if (x.ledger_pending !== null && x.ledger_pending > 10_000)
    out.push({ alert: 'InferLedgerLag', labels: {}, value: x.ledger_pending });
  // absent(up{pod=~"ledger-writer-.*"} == 1): no ledger writer that answers.
  if (!x.instances.some((i) => i.service === 'ledger-writer' && i.state !== 'down'))
    out.push({ alert: 'InferLedgerWriterDown', labels: {}, value: 1 });
  return out;
}

const keyOf = (b: Breach) =>
  `${b.alert}{${Object.entries(b.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',')}}`;

export const summaryOf = (rule: AlertRuleInfo, labels: Record<string, string>) =>
  rule.summary.replace(/\{\{\s*\$labels\.(\w+)\s*\}\}/g, (_, k: string) => labels[k] ?? '');

/**
 * Pending and firing, as Prometheus keeps them: a series whose expression holds is pending from the
 * first evaluation it holds at, firing once it has held for the rule's `for` (at most `forCapS`, when
 * set: CONSOLE_ALERTS_FOR_S), and forgotten at the first evaluation it does not hold. Per gateway
 * replica, in memory: a replica that just started counts `for` from its start.
 */
export class AlertEvaluator {
  private readonly active = new Map<string, number>();
  private readonly rules = new Map(ALERT_RULES.map((r) => [r.alert, r]));

  constructor(
    private readonly forCapS: number | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  evaluate(inputs: AlertInputs): AlertView[] {
    const now = this.now();
    const found = breaches(inputs);
    const keys = new Set<string>();
    const out: AlertView[] = [];
    for (const b of found) {
      const rule = this.rules.get(b.alert);
      if (!rule) continue;
      const key = keyOf(b);
      keys.add(key);
      const since = this.active.get(key) ?? now;
      this.active.set(key, since);
      const forMs = 1000 * Math.min(rule.for_s, this.forCapS ?? rule.for_s);
      const firing = now - since >= forMs;
      out.push({
        alert: b.alert,
        severity: rule.severity,
        state: firing ? 'firing' : 'pending',
        labels: b.labels,
        since: firing ? since + forMs : since,
        value: Number.isFinite(b.value) ? b.value : null,
        summary: summaryOf(rule, b.labels),
      });
    }
    for (const k of [...this.active.keys()]) if (!keys.has(k)) this.active.delete(k);
    return out.sort(
      (a, b) =>
        (a.state === b.state ? 0 : a.state === 'firing' ? -1 : 1) ||
        (a.severity === b.severity ? 0 : a.severity === 'critical' ? -1 : 1) ||
        a.since - b.since,
    );
  }
}
