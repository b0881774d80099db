/**
 * Writes the Grafana dashboards (k8s/components/monitoring/dashboards/*.json, provisioned by the k8s
 * monitoring component and by the compose stack's Grafana) and the compose Prometheus rules file
 * (docker/observability/prometheus/alerts.yml, the groups of the k8s PrometheusRule) from one source:
 *   node --conditions=source --import ./tools/ts-register.js tools/observability.ts
 *   npx biome format --write k8s/components/monitoring/dashboards
 * test/integration/dashboards.spec.ts checks every query against live /metrics scrapes and that the
 * committed files are what this writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

export const DASHBOARD_DIR = 'k8s/components/monitoring/dashboards';
export const COMPOSE_RULES = 'docker/observability/prometheus/alerts.yml';
export const K8S_RULES = 'k8s/components/monitoring/alerts.yaml';

interface Panel {
  title: string;
  /** PromQL, with its legend. */
  targets: Array<[expr: string, legend: string]>;
  unit?: string;
  type?: 'timeseries' | 'stat';
  description?: string;
}

interface Board {
  uid: string;
  title: string;
  description: string;
  /** Template variables: name -> label_values() query. */
  vars?: Record<string, string>;
  panels: Panel[];
}

const q = (p: number, metric: string, by: string, filter = '') =>
  `histogram_quantile(${p}, sum by (le${by ? `, ${by}` : ''}) (rate(${metric}_bucket${filter}[$__rate_interval])))`;

export const BOARDS: Board[] = [
  {
    uid: 'infer-overview',
    title: 'Infer / Overview',
    description: 'The public API at a glance: traffic, errors, latency, tokens, load per service.',
    panels: [
      {
        title: 'Requests per second by status',
        targets: [['sum by (status) (rate(gateway_http_requests_total[$__rate_interval]))', '{{status}}']],
        unit: 'reqps',
      },
      {
        title: 'Share of 5xx answers',
        targets: [
          [
            'sum(rate(gateway_http_requests_total{status=~"5.."}[$__rate_interval])) / clamp_min(sum(rate(gateway_http_requests_total[$__rate_interval])), 1e-9)',
            '5xx',
          ],
        ],
        unit: 'percentunit',
      },
      {
        title: 'p95 request duration by route',
        targets: [[q(0.95, 'gateway_http_request_duration_seconds', 'route'), '{{route}}']],
        unit: 's',
      },
      {
        title: 'p95 time to first streamed chunk by route',
        targets: [[q(0.95, 'gateway_stream_time_to_first_chunk_seconds', 'route'), '{{route}}']],
        unit: 's',
      },
      {
        title: 'Tokens per second by type',
        targets: [['sum by (type) (rate(gateway_tokens_total[$__rate_interval]))', '{{type}}']],
      },
      {
        title: 'Errors by code',
        targets: [
          ['sum by (status, code) (rate(gateway_errors_total[$__rate_interval]))', '{{status}} {{code}}'],
        ],
        unit: 'reqps',
      },
      { title: 'Open streams', targets: [['sum(gateway_open_streams)', 'streams']] },
      {
        title: 'Requests in flight by service',
        targets: [['sum by (service) (infer_rpc_inflight)', '{{service}}']],
      },
    ],
  },
  {
    uid: 'infer-models',
    title: 'Infer / Per model',
    description:
      'One model (or several): requests, tokens by tier, time to first token, time per output token.',
    vars: { model: 'label_values(gateway_model_requests_total, model)' },
    panels: [
      {
        title: 'Requests per second by status',
        targets: [
          [
            'sum by (model, status) (rate(gateway_model_requests_total{model=~"$model"}[$__rate_interval]))',
            '{{model}} {{status}}',
          ],
        ],
        unit: 'reqps',
      },
      {
        title: 'Tokens per second by tier and type',
        targets: [
          [
            'sum by (model, tier, type) (rate(gateway_tokens_total{model=~"$model"}[$__rate_interval]))',
            '{{model}} {{tier}} {{type}}',
          ],
        ],
      },
      {
        title: 'Time to first token (p50, p95)',
        targets: [
          [
            q(0.5, 'gen_ai_server_time_to_first_token_seconds', 'model', '{model=~"$model"}'),
            'p50 {{model}}',
          ],
          [
            q(0.95, 'gen_ai_server_time_to_first_token_seconds', 'model', '{model=~"$model"}'),
            'p95 {{model}}',
          ],
        ],
        unit: 's',
      },
      {
        title: 'Time per output token (p50, p95)',
        targets: [
          [
            q(0.5, 'gen_ai_server_time_per_output_token_seconds', 'model', '{model=~"$model"}'),
            'p50 {{model}}',
          ],
          [
            q(0.95, 'gen_ai_server_time_per_output_token_seconds', 'model', '{model=~"$model"}'),
            'p95 {{model}}',
          ],
        ],
        unit: 's',
      },
      {
        title: 'Service request duration p95 by outcome',
        targets: [
          [
            q(0.95, 'gen_ai_server_request_duration_seconds', 'model, outcome', '{model=~"$model"}'),
            '{{model}} {{outcome}}',
          ],
        ],
        unit: 's',
      },
      {
        title: 'Gateway to service round trip (NATS RPC) p95',
        targets: [[q(0.95, 'gateway_rpc_duration_seconds', 'model', '{model=~"$model"}'), '{{model}}']],
        unit: 's',
      },
    ],
  },
  {
    uid: 'infer-services',
    title: 'Infer / Per service',
    description:
      'The NATS services and the ledger writer: load, outcomes, errors, readiness, process health.',
    vars: { service: 'label_values(infer_rpc_inflight, service)' },
    panels: [
      {
        title: 'Requests in flight',
        targets: [['sum by (service) (infer_rpc_inflight{service=~"$service"})', '{{service}}']],
      },
      {
        title: 'Requests answered by subject and outcome',
        targets: [
          [
            'sum by (subject, outcome) (rate(infer_rpc_requests_total{service=~"$service"}[$__rate_interval]))',
            '{{subject}} {{outcome}}',
          ],
        ],
        unit: 'reqps',
      },
      {
        title: 'Errors by operation and code',
        targets: [
          [
            'sum by (operation, code) (rate(gen_ai_server_errors_total[$__rate_interval]))',
            '{{operation}} {{code}}',
          ],
        ],
        unit: 'reqps',
      },
      {
        title: 'Readiness checks (engines, NATS, stores)',
        targets: [
          ['min by (service, check) (infer_ready_check{service=~"$service"})', '{{service}} {{check}}'],
        ],
      },
      {
        title: 'CPU',
        targets: [
          [
            'sum by (service) (rate(process_cpu_seconds_total{service=~"$service"}[$__rate_interval]))',
            '{{service}}',
          ],
        ],
        unit: 'percentunit',
      },
      {
        title: 'Resident memory',
        targets: [['sum by (service) (process_resident_memory_bytes{service=~"$service"})', '{{service}}']],
        unit: 'bytes',
      },
      {
        title: 'Event loop lag p99',
        targets: [
          ['max by (service) (nodejs_eventloop_lag_p99_seconds{service=~"$service"})', '{{service}}'],
        ],
        unit: 's',
      },
    ],
  },
  {
    uid: 'infer-queues',
    title: 'Infer / Queues',
    description: 'BullMQ queues of the audio and image services: depth, job duration, outcomes, waits.',
    panels: [
      {
        title: 'Jobs by queue and state',
        targets: [['sum by (queue, state) (infer_bullmq_queue_jobs)', '{{queue}} {{state}}']],
      },
      {
        title: 'Job run duration p95',
        targets: [[q(0.95, 'infer_bullmq_job_duration_seconds', 'queue, name'), '{{queue}} {{name}}']],
        unit: 's',
      },
      {
        title: 'Job runs by outcome',
        targets: [
          [
            'sum by (queue, outcome) (rate(infer_bullmq_job_duration_seconds_count[$__rate_interval]))',
            '{{queue}} {{outcome}}',
          ],
        ],
        unit: 'ops',
      },
      {
        title: 'Transcription job wait p95 (queued to started)',
        targets: [[q(0.95, 'audio_job_wait_seconds', 'name'), '{{name}}']],
        unit: 's',
      },
    ],
  },
  {
    uid: 'infer-limits',
    title: 'Infer / Limits and quotas',
    description: 'Admissions refused by each limit, held admissions, 429 and 402 answers.',
    panels: [
      {
        title: 'Admissions refused by limit',
        targets: [
          [
            'sum by (limit, status) (rate(gateway_limits_refusals_total[$__rate_interval]))',
            '{{limit}} {{status}}',
          ],
        ],
        unit: 'reqps',
      },
      {
        title: '429 and 402 answers by route',
        targets: [
          [
            'sum by (route, status) (rate(gateway_http_requests_total{status=~"429|402"}[$__rate_interval]))',
            '{{route}} {{status}}',
          ],
        ],
        unit: 'reqps',
      },
      {
        title: 'Admissions held (concurrency slots, token holds)',
        targets: [['sum(gateway_limits_held_admissions)', 'held']],
      },
      {
        title: 'Counter rebuilds from the ledger',
        targets: [
          ['sum by (limit) (rate(gateway_limits_counter_rebuilds_total[$__rate_interval]))', '{{limit}}'],
        ],
      },
    ],
  },
  {
    uid: 'infer-ledger',
    title: 'Infer / Usage ledger',
    description:
      'Usage events from the gateways to PostgreSQL: lag, writes, duplicates, failures, tokens billed.',
    panels: [
      {
        title: 'Ledger lag (events not yet delivered)',
        targets: [['max(ledger_pending_events)', 'pending']],
      },
      {
        title: 'Events written, duplicates skipped, rejected',
        targets: [
          ['sum(rate(ledger_events_written_total[$__rate_interval]))', 'written'],
          ['sum(rate(ledger_events_duplicate_total[$__rate_interval]))', 'duplicates'],
          ['sum(rate(ledger_events_rejected_total[$__rate_interval]))', 'rejected'],
        ],
        unit: 'ops',
      },
      {
        title: 'Batches and write failures',
        targets: [
          ['sum(rate(ledger_batches_total[$__rate_interval]))', 'batches'],
          ['sum(rate(ledger_write_failures_total[$__rate_interval]))', 'failures'],
        ],
        unit: 'ops',
      },
      {
        title: 'Tokens billed by tier',
        targets: [['sum by (tier) (rate(gateway_tokens_total[$__rate_interval]))', '{{tier}}']],
      },
    ],
  },
];

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** The Grafana dashboard model (schemaVersion 39) of a board. */
export function dashboardJson(b: Board): Record<string, unknown> {
  const templating = [
    {
      name: 'datasource',
      label: 'Data source',
      type: 'datasource',
      query: 'prometheus',
      current: {},
      hide: 0,
    },
    ...Object.entries(b.vars ?? {}).map(([name, query]) => ({
      name,
      type: 'query',
      datasource: DATASOURCE,
      query: { query, refId: `${name}-var` },
      definition: query,
      includeAll: true,
      multi: true,
      allValue: '.*',
      current: { text: 'All', value: '$__all' },
      refresh: 2,
      hide: 0,
    })),
  ];
  return {
    uid: b.uid,
    title: b.title,
    description: b.description,
    tags: ['infer'],
    schemaVersion: 39,
    editable: true,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    templating: { list: templating },
    panels: b.panels.map((p, i) => ({
      id: i + 1,
      type: p.type ?? 'timeseries',
      title: p.title,
      ...(p.description ? { description: p.description } : {}),
      datasource: DATASOURCE,
      gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: Math.floor(i / 2) * 8 },
      fieldConfig: { defaults: { unit: p.unit ?? 'short' }, overrides: [] },
      options: { legend: { displayMode: 'list', placement: 'bottom', showLegend: true } },
      targets: p.targets.map(([expr, legendFormat], j) => ({
        refId: String.fromCharCode(65 + j),
        datasource: DATASOURCE,
        expr,
        legendFormat,
      })),
    })),
  };
}

/** The files this writes, path -> content. */
export function outputs(repo = '.'): Map<string, string> {
  const out = new Map<string, string>();
  for (const b of BOARDS) {
    out.set(
      join(DASHBOARD_DIR, `${b.uid.replace(/^infer-/, '')}.json`),
      `${JSON.stringify(dashboardJson(b), null, 2)}\n`,
    );
  }
  const rule = parse(readFileSync(join(repo, K8S_RULES), 'utf8')) as { spec: { groups: unknown[] } };
  out.set(
    COMPOSE_RULES,
    `# Generated by tools/observability.ts from ${K8S_RULES} (the PrometheusRule's groups): edit that file.\n${stringify({ groups: rule.spec.groups })}`,
  );
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [path, text] of outputs()) {
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
