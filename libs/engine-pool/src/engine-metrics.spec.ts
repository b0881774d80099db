import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EngineReport, emptySample, HIT_WINDOW_MS, parseEngineMetrics } from './engine-metrics.js';

const parse = (text: string) => {
  const s = emptySample();
  return { found: parseEngineMetrics(text, s), s };
};

describe("parseEngineMetrics (an engine's Prometheus text)", () => {
  it("reads vLLM's names with labels, sums series and skips everything else", () => {
    const { found, s } = parse(
      [
        '# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.',
        '# TYPE vllm:prefix_cache_queries_total counter',
        'vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B"} 1200.0',
        'vllm:prefix_cache_queries_total{engine="1",model_name="meta-llama/Llama-3.1-8B"} 800.0',
        'vllm:prefix_cache_queries_created{engine="0",model_name="meta-llama/Llama-3.1-8B"} 1.7e9',
        'vllm:prefix_cache_hits_total{engine="0",model_name="meta-llama/Llama-3.1-8B"} 900.0',
        'vllm:prefix_cache_hits_total{engine="1",model_name="meta-llama/Llama-3.1-8B"} 300.0',
        'vllm:num_requests_waiting{engine="0",model_name="m"} 3.0',
        'vllm:num_requests_waiting{engine="1",model_name="m"} 1.0',
        'vllm:num_requests_running{model_name="m"} 12.0',
        'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5',
        'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.25',
        'vllm:num_requests_waiting_by_reason{reason="capacity"} 99',
        'vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="m"} 4.0',
        'python_gc_objects_collected_total{generation="0"} 12345.0',
        '',
      ].join('\n'),
    );
    assert.equal(found, true);
    assert.equal(s.queries, 2000);
    assert.equal(s.hits, 1200);
    assert.equal(s.waiting, 4);
    assert.equal(s.running, 12);
    assert.equal(s.kvUsage, 0.375);
    assert.ok(Number.isNaN(s.hitRateGauge));
  });

  it('reads the older names (gpu_ counters, the hit-rate gauge, gpu_cache_usage_perc), no labels, CRLF', () => {
    const older = parse(
      [
        'vllm:gpu_prefix_cache_queries_total 50',
        'vllm:gpu_prefix_cache_hits_total 20',
        'vllm:gpu_cache_usage_perc 0.1',
        'vllm:num_requests_running 2 1700000000000',
      ].join('\r\n'),
    ).s;
    assert.equal(older.queries, 50);
    assert.equal(older.hits, 20);
    assert.equal(older.kvUsage, 0.1);
    assert.equal(older.running, 2);
    assert.ok(Number.isNaN(older.waiting));
    const gauge = parse('vllm:gpu_prefix_cache_hit_rate{model_name="x"} 0.42\n').s;
    assert.equal(gauge.hitRateGauge, 0.42);
    assert.ok(Number.isNaN(gauge.queries));
    // Both generations exported: the newer names win (no double counting).
    const both = parse(
      'vllm:prefix_cache_queries_total 10\nvllm:gpu_prefix_cache_queries_total 10\n' +
        'vllm:prefix_cache_hits_total 4\nvllm:gpu_prefix_cache_hits_total 4\n',
    ).s;
    assert.equal(both.queries, 10);
    assert.equal(both.hits, 4);
  });

  it("reads SGLang's names: token counters (cached tokens by cache source), the queue, token usage", () => {
    const { found, s } = parse(
      [
        '# HELP sglang:prompt_tokens_total Number of prefill tokens processed.',
        '# TYPE sglang:prompt_tokens_total counter',
        'sglang:prompt_tokens_total{model_name="qwen",tp_rank="0"} 5000.0',
        'sglang:cached_tokens_total{model_name="qwen",cache_source="device"} 3000.0',
        'sglang:cached_tokens_total{model_name="qwen",cache_source="host"} 500.0',
        'sglang:generation_tokens_total{model_name="qwen"} 8000.0',
        'sglang:cache_hit_rate{model_name="qwen"} 0.1',
        'sglang:num_queue_reqs{model_name="qwen"} 6',
        'sglang:num_running_reqs{model_name="qwen"} 30',
        'sglang:token_usage{model_name="qwen"} 0.62',
        'sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="qwen"} 40.0',
        'sglang:num_requests_total{model_name="qwen"} 99',
        '',
      ].join('\n'),
    );
    assert.equal(found, true);
    assert.equal(s.queries, 5000);
    assert.equal(s.hits, 3500);
    assert.equal(s.hitRateGauge, 0.1);
    assert.equal(s.waiting, 6);
    assert.equal(s.running, 30);
    assert.equal(s.kvUsage, 0.62);
    // An SGLang without the cached-tokens counter: its hit-rate gauge is what it reports.
    const older = parse('sglang:prompt_tokens_total 100\nsglang:cache_hit_rate 0.25\n').s;
    assert.ok(Number.isNaN(older.queries) && Number.isNaN(older.hits));
    assert.equal(older.hitRateGauge, 0.25);
    const r = new EngineReport();
    r.record(older, 1);
    assert.equal(r.cacheHitRate, 0.25);
  });

  it('keeps label values with braces and quotes apart from the value; finds nothing in other engines', () => {
    const { s } = parse('vllm:num_requests_running{model_name="a} \\"b\\" {c"} 7\n');
    assert.equal(s.running, 7);
    // A hit counter without its queries says nothing.
    assert.ok(Number.isNaN(parse('vllm:prefix_cache_hits_total 5\n').s.hits));
    const tei = parse('# TYPE te_request_count counter\nte_request_count{method="embed"} 3\n');
    assert.equal(tei.found, false);
    assert.equal(parse('').found, false);
    assert.equal(parse('vllm:num_requests_running NaN\n').found, false);
  });
});

describe('EngineReport (the hit rate over the last minute)', () => {
  const sample = (queries: number, hits: number) => ({ ...emptySample(), queries, hits });

  it('is the lifetime rate with one sample, then the counters’ change over the window', () => {
    const r = new EngineReport();
    const t0 = 1_000_000;
    r.record(sample(1000, 900), t0);
    assert.equal(r.cacheHitRate, 0.9);
    assert.equal(r.at, t0);
    r.record(sample(1100, 910), t0 + 10_000);
    assert.equal(r.cacheHitRate, 0.1); // 10 hits of 100 lookups since the first sample
    r.record(sample(1200, 1010), t0 + 20_000);
    assert.equal(r.cacheHitRate, 110 / 200);
    // The first sample leaves the window: the base moves to the 10 s one.
    r.record(sample(1300, 1110), t0 + 10_000 + HIT_WINDOW_MS);
    assert.equal(r.cacheHitRate, 200 / 200);
    // No lookups in the window (an idle engine): the lifetime rate.
    r.record(sample(1300, 1110), t0 + 10_000 + 3 * HIT_WINDOW_MS);
    assert.equal(r.cacheHitRate, 1110 / 1300);
  });

  it('starts again when a counter goes down (the engine restarted)', () => {
    const r = new EngineReport();
    r.record(sample(1000, 900), 0);
    r.record(sample(2000, 1000), 1_000);
    assert.equal(r.cacheHitRate, 0.1);
    r.record(sample(40, 10), 2_000); // restarted: lifetime of the new process, not a negative delta
    assert.equal(r.cacheHitRate, 0.25);
    r.record(sample(140, 60), 3_000);
    assert.equal(r.cacheHitRate, 0.5); // 50 of 100 since the restart
    // A restart with no lookups yet: nothing to report for the rate.
    r.record(sample(0, 0), 4_000);
    assert.equal(r.cacheHitRate, null);
  });

  it('uses the older gauge, the queue and KV figures as given, and clears to "not reported"', () => {
    const r = new EngineReport();
    r.record({ ...emptySample(), hitRateGauge: 0.3, waiting: 2, running: 5, kvUsage: 0.7 }, 10);
    assert.deepEqual([r.cacheHitRate, r.waiting, r.running, r.kvUsage], [0.3, 2, 5, 0.7]);
    r.record({ ...emptySample(), running: 1 }, 20);
    assert.deepEqual([r.cacheHitRate, r.waiting, r.running, r.kvUsage], [null, null, 1, null]);
    r.clear();
    assert.deepEqual([r.cacheHitRate, r.running, r.at], [null, null, 0]);
  });
});
