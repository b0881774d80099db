import { telemetryRegistry } from '@infer/telemetry';
import { Counter, Gauge, Histogram } from 'prom-client';

/**
 * Prometheus metrics of the engine pools, in the registry every service's ops server serves on
 * /metrics. Labels: the catalog model id and the endpoint URL (a bounded set: the catalog's endpoints
 * or the pods of a headless Service), never members or keys. Per-endpoint children are looked up once
 * per endpoint (Endpoint.metrics), not per request.
 */
export const poolMetrics = {
  inflight: new Gauge({
    name: 'infer_engine_endpoint_inflight',
    help: 'Requests in flight on an engine endpoint, from this service replica',
    labelNames: ['model', 'endpoint'] as const,
    registers: [telemetryRegistry],
  }),
  requests: new Counter({
    name: 'infer_engine_endpoint_requests_total',
    help: 'Requests an engine endpoint finished, by outcome (ok, client_error, busy, connect, status_5xx, timeout, broken, aborted)',
    labelNames: ['model', 'endpoint', 'outcome'] as const,
    registers: [telemetryRegistry],
  }),
  state: new Gauge({
    name: 'infer_engine_endpoint_state',
    help: 'Health of an engine endpoint: 1 up, 0.5 recovering (taking a growing share), 0 cooling down',
    labelNames: ['model', 'endpoint'] as const,
    registers: [telemetryRegistry],
  }),
  cooldowns: new Counter({
    name: 'infer_engine_endpoint_cooldowns_total',
    help: 'Times an engine endpoint was put in a cooldown after a failure (passive or probe)',
    labelNames: ['model', 'endpoint'] as const,
    registers: [telemetryRegistry],
  }),
  cacheHitRate: new Gauge({
    name: 'infer_engine_endpoint_cache_hit_rate',
    help: "Prefix-cache hit rate (0..1) an engine endpoint reports on its /metrics, over about the last minute (vLLM's prefix_cache_hits / prefix_cache_queries); absent when not reported",
    labelNames: ['model', 'endpoint'] as const,
    registers: [telemetryRegistry],
  }),
  engineWaiting: new Gauge({
    name: 'infer_engine_endpoint_requests_waiting',
    help: "Requests waiting in an engine endpoint's own scheduler, as it reports on its /metrics (vLLM's num_requests_waiting); absent when not reported",
    labelNames: ['model', 'endpoint'] as const,
    registers: [telemetryRegistry],
  }),
  retries: new Counter({
    name: 'infer_engine_pool_retries_total',
    help: 'Requests sent to another endpoint after one failed before the first byte (or resumed mid-stream)',
    labelNames: ['model', 'kind'] as const,
    registers: [telemetryRegistry],
  }),
  queued: new Gauge({
    name: 'infer_engine_pool_queue_depth',
    help: 'Requests waiting because every endpoint of the model is saturated',
    labelNames: ['model'] as const,
    registers: [telemetryRegistry],
  }),
  queueWait: new Histogram({
    name: 'infer_engine_pool_queue_wait_seconds',
    help: 'Time a request waited in the pool queue, by caller class',
    labelNames: ['model', 'class'] as const,
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [telemetryRegistry],
  }),
  spills: new Counter({
    name: 'infer_engine_pool_affinity_spills_total',
    help: "prefix_affinity requests placed on another endpoint than their key's, which was over its load bound or full",
    labelNames: ['model'] as const,
    registers: [telemetryRegistry],
  }),
  rejected: new Counter({
    name: 'infer_engine_pool_rejected_total',
    help: 'Requests the pool could not place: overloaded (queue timeout) or unavailable (no endpoint up)',
    labelNames: ['model', 'reason'] as const,
    registers: [telemetryRegistry],
  }),
};
