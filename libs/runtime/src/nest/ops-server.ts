import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RpcServer } from '@infer/rpc';
import type { Logger } from '@infer/telemetry';
import { telemetryRegistry } from '@infer/telemetry';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { readOpsStatus } from '../status.js';

export interface ReadinessCheck {
  name: string;
  /** true when ready; false or a thrown error when not. */
  check(): boolean | Promise<boolean>;
}

/** Runs readiness checks: each passes when it returns true; one that throws fails. */
export async function runReadinessChecks(
  list: ReadinessCheck[],
): Promise<{ ready: boolean; checks: Record<string, boolean> }> {
  const checks: Record<string, boolean> = {};
  for (const c of list) {
    try {
      checks[c.name] = (await c.check()) === true;
    } catch {
      checks[c.name] = false;
    }
  }
  return { ready: Object.values(checks).every(Boolean), checks };
}

export interface OpsServerOptions {
  service: string;
  port: number;
  host?: string;
  log: Logger;
  /** The RPC server whose in-flight count and request totals are exported (api roles). */
  rpc?: RpcServer | null;
  checks?: ReadinessCheck[];
  /** The service's own metrics, served on the same /metrics. */
  registries?: Registry[];
}

/**
 * The ops endpoints of a service process, apart from its NATS traffic, for probes and scrapers:
 * `GET /healthz` (200 while the process runs and is not shutting down), `GET /readyz` (200 when every
 * readiness check passes: NATS connected, engines loaded ...; 503 with the failing checks otherwise),
 * `GET /metrics` (Prometheus text: `infer_rpc_inflight`, `infer_rpc_requests_total`, the process
 * metrics and the service's own), `GET /status/<name>` (registerOpsStatus: e.g. `engine-pools`). Everything is read at scrape time: nothing on the request path.
 */
export class OpsServer {
  readonly registry = new Registry();
  private server: Server | null = null;
  private stopping = false;

  constructor(private readonly opts: OpsServerOptions) {
    const service = opts.service;
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
    const rpc = opts.rpc;
    new Gauge({
      name: 'infer_rpc_inflight',
      help: 'Requests this replica is working on (the KEDA/HPA scaling signal of the NATS services).',
      registers: [this.registry],
      collect() {
        this.set(rpc?.inflightCount ?? 0);
      },
    });
    const totals = new Counter({
      name: 'infer_rpc_requests_total',
      help: 'Requests this replica answered, by subject and outcome (ok: an end frame; error: an error frame).',
      labelNames: ['subject', 'outcome'] as const,
      registers: [this.registry],
    });
    // Counters cannot be set: keep what was reported and add the difference at each scrape.
    const seen = new Map<string, number>();
    const collectTotals = () => {
      if (!rpc) return;
      for (const [subject, c] of rpc.stats) {
        for (const outcome of ['ok', 'error'] as const) {
          const key = `${subject}\u0000${outcome}`;
          const delta = c[outcome] - (seen.get(key) ?? 0);
          if (delta > 0) totals.inc({ subject, outcome }, delta);
          seen.set(key, c[outcome]);
        }
      }
    };
    this.collectTotals = collectTotals;
    // Engine and dependency health: each readiness check (NATS, the app's engines ...), 1 = ready.
    const readiness = () => this.readiness();
    new Gauge({
      name: 'infer_ready_check',
      help: 'Readiness checks of this replica (NATS connection, engines, stores): 1 ready, 0 not',
      labelNames: ['check'] as const,
      registers: [this.registry],
      async collect() {
        const r = await readiness();
        for (const [check, ok] of Object.entries(r.checks)) this.set({ check }, ok ? 1 : 0);
      },
    });
  }

  private readonly collectTotals: () => void;

  /** Marks the process as shutting down: /healthz and /readyz answer 503 from now on. */
  shuttingDown(): void {
    this.stopping = true;
  }

  async readiness(): Promise<{ ready: boolean; checks: Record<string, boolean> }> {
    const r = await runReadinessChecks(this.opts.checks ?? []);
    return { ready: !this.stopping && r.ready, checks: r.checks };
  }

  async metricsText(): Promise<string> {
    this.collectTotals();
    const own = await this.registry.metrics();
    // The process's GenAI and job metrics (@infer/telemetry) come with every service's own.
    const registries = [...(this.opts.registries ?? []), telemetryRegistry];
    const extra = await Promise.all(registries.map((r) => r.metrics()));
    return [own, ...extra].join('\n');
  }

  async start(): Promise<string> {
    const server = createServer((req, res) => void this.route(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port, this.opts.host ?? '0.0.0.0', () => resolve());
    });
    this.server = server;
    const { port } = server.address() as AddressInfo;
    const host = this.opts.host && this.opts.host !== '0.0.0.0' ? this.opts.host : '127.0.0.1';
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return send(res, 405, { error: 'method not allowed' });
      if (path === '/healthz')
        return send(res, this.stopping ? 503 : 200, { status: this.stopping ? 'stopping' : 'ok' });
      if (path === '/readyz') {
        const r = await this.readiness();
        return send(res, r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not ready', checks: r.checks });
      }
      const status = path?.startsWith('/status/') ? readOpsStatus(path.slice(8)) : undefined;
      if (status) return send(res, 200, status());
      if (path === '/metrics') {
        const text = await this.metricsText();
        res.writeHead(200, { 'content-type': this.registry.contentType });
        res.end(text);
        return;
      }
      send(res, 404, { error: 'not found' });
    } catch (err) {
      this.opts.log.warn({ err, path }, 'ops endpoint failed');
      send(res, 500, { error: 'internal error' });
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
