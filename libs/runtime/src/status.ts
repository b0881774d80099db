import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism, hostname, loadavg } from 'node:os';
import { type ServiceStatus, StatusSubjects } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';

let cachedVersion: string | undefined;

/**
 * The version an instance reports: SERVICE_VERSION (set by the deploy: image tag, git sha), else the
 * platform's package.json version.
 */
export function serviceVersion(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SERVICE_VERSION) return env.SERVICE_VERSION;
  if (cachedVersion === undefined) {
    cachedVersion = 'unknown';
    // The platform's root package.json, wherever this file runs from (src/ or a build folder).
    let dir = new URL('.', import.meta.url);
    for (let i = 0; i < 6; i++) {
      dir = new URL('..', dir);
      try {
        const pkg = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as {
          name?: string;
          version?: string;
        };
        if (pkg.name === 'infer-platform') {
          cachedVersion = pkg.version ?? 'unknown';
          break;
        }
      } catch {
        // no package.json at this level
      }
    }
  }
  return cachedVersion;
}

export interface StatusPublisherOptions {
  service: string;
  /** Requests, jobs or events this instance is working on now. */
  inflight: () => number;
  intervalMs?: number;
  version?: string;
  /** Tests only: prepended to the status and ping subjects (as MODEL_SUBJECT_PREFIX is to the RPC ones). */
  subjectPrefix?: string;
  log?: Logger;
}

/**
 * Announces this process on NATS for the operator console (see StatusSubjects): a small status
 * message every `intervalMs` (5 s) and at once on a ping. Costs one publish per interval; nothing
 * on any request path.
 */
export class StatusPublisher {
  readonly instance: string;
  private readonly startedAt = Date.now();
  private readonly intervalMs: number;
  private readonly version: string;
  private readonly subject: string;
  private timer: NodeJS.Timeout | null = null;
  private ping: Subscription | null = null;
  private readonly cpus = Math.max(1, availableParallelism());

  constructor(
    private readonly nc: NatsConnection,
    private readonly opts: StatusPublisherOptions,
  ) {
    this.intervalMs = opts.intervalMs ?? 5_000;
    this.version = opts.version ?? serviceVersion();
    this.subject = (opts.subjectPrefix ?? '') + StatusSubjects.status(opts.service);
    this.instance = `${opts.service}@${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  }

  status(): ServiceStatus {
    return {
      instance: this.instance,
      service: this.opts.service,
      version: this.version,
      host: hostname(),
      pid: process.pid,
      inflight: Math.max(0, Math.floor(this.opts.inflight())),
      load: Math.round((100 * (loadavg()[0] ?? 0)) / this.cpus) / 100,
      rss: process.memoryUsage.rss(),
      started_at: this.startedAt,
      at: Date.now(),
      interval_ms: this.intervalMs,
    };
  }

  publish(): void {
    if (this.nc.isClosed() || this.nc.isDraining()) return;
    try {
      this.nc.publish(this.subject, JSON.stringify(this.status()));
    } catch (err) {
      this.opts.log?.debug({ err }, 'status publish failed');
    }
  }

  start(): void {
    if (this.timer) return;
    this.ping = this.nc.subscribe((this.opts.subjectPrefix ?? '') + StatusSubjects.ping, {
      callback: () => this.publish(),
    });
    this.publish();
    this.timer = setInterval(() => this.publish(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    try {
      this.ping?.unsubscribe();
    } catch {
      // connection already closed
    }
    this.ping = null;
  }
}
