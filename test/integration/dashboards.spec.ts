/**
 * The shipped dashboards and alerts name only metrics the apps export: every panel query of
 * k8s/components/monitoring/dashboards/*.json and every alert of the PrometheusRule is checked against
 * live /metrics scrapes of the real gateway, NATS services (their ops servers) and ledger writer. Also:
 * the committed files are what tools/observability.ts writes, and the compose rules file holds the
 * PrometheusRule's groups.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { parse } from 'yaml';
import { startAudioService } from '../../apps/audio-service/src/app.js';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { type ImageService, startImageService } from '../../apps/image-service/src/app.js';
import { type LedgerWriter, startLedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { BOARDS, COMPOSE_RULES, dashboardJson, K8S_RULES, outputs } from '../../tools/observability.js';
import { type Stack, startStack } from './harness.js';

/** PromQL words that are not metric names. */
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'le',
]);

/** The metric names a PromQL expression selects (functions, label matchers, groupings, ranges left out). */
export function metricNames(expr: string): string[] {
  const s = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // string literals
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges
    .replace(/(?<![A-Za-z0-9_:])\d[\d.]*(?:e[+-]?\d+)?/gi, ' ') // numbers (1e-9)
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  const out = new Set<string>();
  for (const m of s.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*(\()?/g)) {
    const [, name, call] = m as unknown as [string, string, string | undefined];
    if (call || KEYWORDS.has(name) || name.startsWith('$')) continue;
    out.add(name);
  }
  return [...out];
}

/** Sample names a /metrics text can produce (from its TYPE lines: histograms give _bucket/_sum/_count). */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const x of ['_bucket', '_sum', '_count']) names.add(name + x);
    if (type === 'summary') for (const x of ['_sum', '_count']) names.add(name + x);
  }
  return names;
}

/** Metrics of other exporters that the alerts use on purpose (kube-state-metrics, Prometheus, NATS). */
const EXTERNAL = /^(kube_|up$|nats_)/;

describe('metricNames (PromQL)', () => {
  it('keeps metric names, drops functions, labels, groupings, ranges and variables', () => {
    assert.deepEqual(
      metricNames(
        'histogram_quantile(0.95, sum by (le, route) (rate(a_seconds_bucket{route=~"$r", x="by(y)"}[$__rate_interval]))) / clamp_min(sum(rate(b_total[5m])), 1e-9) > 0.1 and on() c == 0',
      ),
      ['a_seconds_bucket', 'b_total', 'c'],
    );
  });
});

describe('dashboards and alerts', () => {
  let stack: Stack;
  let image: ImageService | undefined;
  let ledger: LedgerWriter | undefined;
  const opsUrls: string[] = [];
  const id = randomBytes(4).toString('hex');
  const BULLMQ_PREFIX = `test-dash-${id}`;
  let names = new Set<string>();
  let scraped = '';
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;

  before(async () => {
    const ops = { OPS_PORT: '0', OPS_HOST: '127.0.0.1' };
    stack = await startStack({
      env: { ...ops, BULLMQ_PREFIX, IMAGE_STORE_REDIS_PREFIX: `test:dash:${id}:` },
      services: [
        async (env) => {
          const s = await startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX });
          if (s.opsUrl) opsUrls.push(s.opsUrl);
          return s;
        },
        async (env) => {
          const s = await startAudioService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX });
          if (s.opsUrl) opsUrls.push(s.opsUrl);
          return s;
        },
        async (env) => {
          image = await startImageService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX });
          if (image.opsUrl) opsUrls.push(image.opsUrl);
          return image;
        },
        async (env) => {
          ledger = await startLedgerWriter({
            env: {
              ...env,
              LEDGER_STREAM: env.USAGE_STREAM,
              LEDGER_SUBJECTS: `${env.USAGE_SUBJECT_ROOT}.>`,
              LEDGER_CONSUMER: `ledger-${id}`,
            },
          });
          if (ledger.opsUrl) opsUrls.push(ledger.opsUrl);
          return ledger;
        },
      ],
    });
    if (stack.chat.opsUrl) opsUrls.push(stack.chat.opsUrl);
    // Some traffic, so the scrape is that of a working stack.
    usage = (
      await stack.client('premium').chat.completions.create({
        model: 'chat-G',
        messages: [{ role: 'user', content: 'hello' }],
      })
    ).usage;
    const texts = [await (await fetch(`${stack.url}/metrics`)).text()];
    for (const u of opsUrls) {
      const res = await fetch(`${u}/metrics`);
      assert.equal(res.status, 200, u);
      texts.push(await res.text());
    }
    names = new Set(texts.flatMap((t) => [...exported(t)]));
    scraped = texts.join('\n');
  });

  after(async () => {
    await image?.queue.obliterate({ force: true }).catch(() => undefined);
    await stack?.close();
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    for (const match of [`${BULLMQ_PREFIX}:*`, `test:dash:${id}:*`]) {
      for await (const keys of redis.scanStream({ match, count: 500 }) as AsyncIterable<string[]>) {
        if (keys.length) await redis.del(...keys);
      }
    }
    redis.disconnect();
  });

  it('scraped the gateway, five services and the ledger writer', () => {
    assert.equal(opsUrls.length, 5);
    for (const n of ['gateway_http_requests_total', 'infer_rpc_inflight', 'ledger_pending_events']) {
      assert.ok(names.has(n), n);
    }
    // The scrape lists the GenAI ones, with samples after the chat call.
    assert.ok(names.has('gen_ai_server_request_duration_seconds_bucket'));
    assert.ok(names.has('infer_bullmq_queue_jobs'));
  });

  it('GenAI metrics count the chat call: tokens by model and tier, the service side by operation; no member ids', async () => {
    const value = (series: string) => {
      const line = scraped.split('\n').find((l) => l.startsWith(`${series} `));
      return line ? Number(line.slice(series.length + 1)) : Number.NaN;
    };
    assert.ok(usage);
    assert.equal(
      value('gateway_tokens_total{model="chat-G",tier="premium",type="output"}'),
      usage.completion_tokens,
    );
    assert.equal(
      value('gateway_tokens_total{model="chat-G",tier="premium",type="input"}'),
      usage.prompt_tokens,
    );
    assert.equal(
      value('gen_ai_server_tokens_total{operation="chat",model="chat-G",type="output"}'),
      usage.completion_tokens,
    );
    assert.equal(
      value(
        'gateway_model_requests_total{model="chat-G",tier="premium",endpoint="/v1/chat/completions",status="200"}',
      ),
      1,
    );
    const members = (await stack.prisma.member.findMany()) as Array<{ id: string }>;
    assert.ok(members.length > 0);
    for (const m of members) assert.ok(!scraped.includes(m.id), 'no member id in any label');
  });

  it('every panel query of every dashboard names metrics the apps export', () => {
    assert.equal(BOARDS.length, 6);
    for (const b of BOARDS) {
      const json = JSON.parse(
        readFileSync(`k8s/components/monitoring/dashboards/${b.uid.replace(/^infer-/, '')}.json`, 'utf8'),
      ) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
      assert.deepEqual(json, dashboardJson(b));
      for (const p of json.panels) {
        assert.ok(p.targets.length > 0, `${b.title} / ${p.title}: a query`);
        for (const t of p.targets) {
          const used = metricNames(t.expr);
          assert.ok(used.length > 0, `${b.title} / ${p.title}: ${t.expr}`);
          for (const m of used) assert.ok(names.has(m), `${b.title} / ${p.title}: ${m} is not exported`);
        }
      }
    }
  });

  it('every alert names metrics the apps export (or those of kube-state-metrics / the NATS exporter)', () => {
    const rule = parse(readFileSync(K8S_RULES, 'utf8')) as {
      spec: { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
    };
    let checked = 0;
    for (const r of rule.spec.groups.flatMap((g) => g.rules)) {
      for (const m of metricNames(r.expr)) {
        if (EXTERNAL.test(m)) continue;
        assert.ok(names.has(m), `${r.alert}: ${m} is not exported`);
        checked++;
      }
    }
    assert.ok(checked >= 9, `${checked} metrics checked`);
  });

  it('the committed dashboards and compose rules are what tools/observability.ts writes', () => {
    for (const [path, text] of outputs()) {
      // JSON as data (Biome formats the files), the rules file as text.
      if (path.endsWith('.json'))
        assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), JSON.parse(text), path);
      else assert.equal(readFileSync(path, 'utf8'), text, path);
    }
    const compose = parse(readFileSync(COMPOSE_RULES, 'utf8')) as { groups: unknown };
    const k8s = parse(readFileSync(K8S_RULES, 'utf8')) as { spec: { groups: unknown } };
    assert.deepEqual(compose.groups, k8s.spec.groups);
  });
});
