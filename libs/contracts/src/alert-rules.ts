/**
 * The alerts of the shipped PrometheusRule (k8s/components/monitoring/alerts.yaml) as the console
 * knows them: name, severity, `for`, summary and threshold, the same as the file (a unit spec reads the
 * file and compares). `evaluated`: the console evaluates the rule from what the gateways see
 * (apps/gateway/src/admin/overview/alert-eval.ts, docs/adr/0111-console-health-and-alerts.md); the
 * others need metrics only Prometheus has (histograms of other processes, kube-state-metrics).
 */
export interface AlertRuleInfo {
  alert: string;
  severity: 'critical' | 'warning';
  /** The rule's `for`, in seconds. */
  for_s: number;
  /** The annotation, with `{{ $labels.x }}` placeholders. */
  summary: string;
  /** The number the rule's expression compares with (`> 0.05` ...). */
  threshold: number;
  evaluated: boolean;
}

export const ALERT_RULES: readonly AlertRuleInfo[] = [
  {
    alert: 'InferHighErrorRate',
    severity: 'critical',
    for_s: 600,
    summary: 'More than 5% of gateway answers are 5xx.',
    threshold: 0.05,
    evaluated: true,
  },
  {
    alert: 'InferHighLatency',
    severity: 'warning',
    for_s: 600,
    summary: 'p95 time to the first streamed chunk is over 5 s.',
    threshold: 5,
    evaluated: false,
  },
  {
    alert: 'InferLimitsStoreDown',
    severity: 'critical',
    for_s: 120,
    summary: 'No gateway is ready and requests are refused with 503 (Redis, PostgreSQL or NATS down).',
    threshold: 1,
    evaluated: true,
  },
  {
    alert: 'InferGatewayNotReady',
    severity: 'warning',
    for_s: 300,
    summary: 'A gateway replica reports not ready (its /readyz checks PostgreSQL, Redis and NATS).',
    threshold: 0,
    evaluated: true,
  },
  {
    alert: 'InferQueueBacklog',
    severity: 'warning',
    for_s: 600,
    summary: 'More than 50 jobs have waited 10 minutes in {{ $labels.queue }}: workers are not keeping up.',
    threshold: 50,
    evaluated: true,
  },
  {
    alert: 'InferJobFailures',
    severity: 'warning',
    for_s: 600,
    summary: 'Jobs of {{ $labels.queue }} fail more than once every 10 s.',
    threshold: 0.1,
    evaluated: false,
  },
  {
    alert: 'InferServiceSaturated',
    severity: 'warning',
    for_s: 600,
    summary: '{{ $labels.service }} has more than 200 requests in flight.',
    threshold: 200,
    evaluated: true,
  },
  {
    alert: 'InferSlowFirstToken',
    severity: 'warning',
    for_s: 600,
    summary: 'p95 time to first token of {{ $labels.model }} is over 10 s.',
    threshold: 10,
    evaluated: false,
  },
  {
    alert: 'InferModelErrors',
    severity: 'warning',
    for_s: 600,
    summary: 'More than 10% of the requests to {{ $labels.model }} end in an error.',
    threshold: 0.1,
    evaluated: true,
  },
  {
    alert: 'InferEngineNotReady',
    severity: 'warning',
    for_s: 300,
    summary: '{{ $labels.service }}: readiness check {{ $labels.check }} fails.',
    threshold: 0,
    evaluated: true,
  },
  {
    alert: 'InferLedgerLag',
    severity: 'critical',
    for_s: 600,
    summary: 'The ledger writer is more than 10,000 usage events behind.',
    threshold: 10000,
    evaluated: true,
  },
  {
    alert: 'InferLedgerWriterDown',
    severity: 'critical',
    for_s: 300,
    summary: 'No ledger-writer is up; usage events wait in JetStream.',
    threshold: 1,
    evaluated: true,
  },
];

/** One rule's threshold by name (the console draws it on the chart that shows the same figure). */
export const alertThreshold = (alert: string): number =>
  ALERT_RULES.find((r) => r.alert === alert)?.threshold ?? Number.NaN;
