import { Injectable } from '@nestjs/common';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Prometheus metrics of the gateway: requests by route and status, latency histograms, streams. */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'gateway_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'gateway_http_request_duration_seconds',
    help: 'Time from request to the end of the response (whole stream included)',
    labelNames: ['route', 'method'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly ttfb = new Histogram({
    name: 'gateway_stream_time_to_first_chunk_seconds',
    help: 'Time from request to the first streamed chunk',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: 'gateway_errors_total',
    help: 'Error answers by route, status and error code (the envelope code)',
    labelNames: ['route', 'status', 'code'] as const,
    registers: [this.registry],
  });
  readonly modelRequests = new Counter({
    name: 'gateway_model_requests_total',
    help: 'Requests that reached a model service, by model, tier, endpoint and status',
    labelNames: ['model', 'tier', 'endpoint', 'status'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'gateway_tokens_total',
    help: 'Tokens billed, by model, tier and type (input, output)',
    labelNames: ['model', 'tier', 'type'] as const,
    registers: [this.registry],
  });
  readonly rpcDuration = new Histogram({
    name: 'gateway_rpc_duration_seconds',
    help: 'NATS RPC to a model service: from dispatch to its end frame (whole stream), by endpoint and model',
    labelNames: ['endpoint', 'model'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly openStreams = new Gauge({
    name: 'gateway_open_streams',
    help: 'Streams being relayed now',
    registers: [this.registry],
  });

  /** Public API requests (/v1, /v2, /mcp) this replica is answering now (the console's overview). */
  inflight = 0;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'gateway_' });
  }

  observe(route: string, method: string, status: number, seconds: number, code?: string): void {
    const s = String(status);
    this.requests.inc({ route, method, status: s });
    this.latency.observe({ route, method }, seconds);
    if (status >= 400) this.errors.inc({ route, status: s, code: code ?? '' });
  }

  /** One request a model service handled (or failed): status, tokens by tier, RPC duration. */
  modelDone(
    model: string,
    tier: string,
    endpoint: string,
    status: number,
    inputTokens: number,
    outputTokens: number,
    seconds: number,
  ): void {
    this.modelRequests.inc({ model, tier, endpoint, status: String(status) });
    if (inputTokens > 0) this.tokens.inc({ model, tier, type: 'input' }, inputTokens);
    if (outputTokens > 0) this.tokens.inc({ model, tier, type: 'output' }, outputTokens);
    this.rpcDuration.observe({ endpoint, model }, seconds);
  }
}
