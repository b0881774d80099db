import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism, hostname, loadavg } from 'node:os';
import { type OpsStatusReply, type ServiceStatus, StatusSubjects } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';

const opsStatuses = new Map<string, () => unknown>();

/**
 * Adds a status document to this process, read on demand: every ops server answers `GET /status/<name>`
 * with `fn()` as JSON, and every StatusPublisher answers the NATS request StatusSubjects.opsStatus(name)
 * with it (e.g. libs/engine-pool registers `engine-pools`: each pool's endpoints, health, in flight,
 * cooldowns, recent errors, queue; the console's Models page reads it).
 */
export function registerOpsStatus(name: string, fn: () => unknown): void {
  opsStatuses.set(name, fn);
}

/** The reader of a status document registered under `name`, if any. */
export function readOpsStatus(name: string): (() => unknown) | undefined {
  return opsStatuses.get(name);
}

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

export interface Readiness {
  ready: boolean;
  checks: Record<string, boolean>;
}

const READINESS_TIMEOUT_MS = 2_000;

export interface StatusPublisherOptions {
  service: string;
  /** Requests, jobs or events this instance is working on now. */
  inflight: () => number;
  intervalMs?: number;
  version?: string;
  /**
   * What the instance's /readyz says (its readiness checks), read before each message; a check that
   * throws or takes over 2 s counts as failing. Absent: the message says nothing about readiness.
   */
  readiness?: () => Readiness | Promise<Readiness>;
  /** Tests only: prepended to the status and ping subjects (as MODEL_SUBJECT_PREFIX is to the RPC ones). */
  subjectPrefix?: string;
  log?: Logger;
}

/**
 * Announces this process on NATS for the operator console (see StatusSubjects): a small status
 * message every `intervalMs` (5 s) and at once on a ping, with its readiness (what its /readyz says),
 * and a last message marked `stopping` when it stops. Costs one publish (and one run of the readiness
 * checks) per interval; nothing on any request path.
 */
export class StatusPublisher {
  readonly instance: string;
  private readonly startedAt = Date.now();
  private readonly intervalMs: number;
  private readonly version: string;
  private readonly subject: string;
  private timer: NodeJS.Timeout | null = null;
  private ping: Subscription | null = null;
  private opsRequests: Subscription | null = null;
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

  private last: Readiness | null = null;
  private publishing = false;

  status(): ServiceStatus {
    const r = this.last;
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
      ...(r ? { ready: r.ready, checks: r.checks } : {}),
      ...(this.timer === null && this.stopped ? { stopping: true } : {}),
    };
  }

  private stopped = false;

  private send(): void {
    if (this.nc.isClosed() || this.nc.isDraining()) return;
    try {
      this.nc.publish(this.subject, JSON.stringify(this.status()));
    } catch (err) {
      this.opts.log?.debug({ err }, 'status publish failed');
    }
  }

  /** Reads the readiness (when there is a check) and publishes; one at a time. */
  publish(): void {
    const readiness = this.opts.readiness;
    if (!readiness) {
      this.send();
      return;
    }
    if (this.publishing) return;
    this.publishing = true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<Readiness>((resolve) => {
      timer = setTimeout(
        () => resolve({ ready: false, checks: { readiness_timeout: false } }),
        READINESS_TIMEOUT_MS,
      );
      timer.unref();
    });
    Promise.race([Promise.resolve().then(readiness), timeout])
      .catch((): Readiness => ({ ready: false, checks: { readiness_error: false } }))
      .then((r) => {
        clearTimeout(timer);
        this.publishing = false;
        if (this.stopped) return;
        this.last = r;
        this.send();
      });
  }

  start(): void {
    if (this.timer) return;
    this.ping = this.nc.subscribe((this.opts.subjectPrefix ?? '') + StatusSubjects.ping, {
      callback: () => this.publish(),
    });
    const prefix = this.opts.subjectPrefix ?? '';
    const name = (subject: string) => subject.slice(subject.lastIndexOf('.') + 1);
    // Ops status requests: answered only for a document this process holds (no reply otherwise).
    this.opsRequests = this.nc.subscribe(prefix + StatusSubjects.opsStatusAll, {
      callback: (err, msg) => {
        if (err || !msg.reply) return;
        const read = readOpsStatus(name(msg.subject));
        if (!read) return;
        try {
          const reply: OpsStatusReply = {
            instance: this.instance,
            process: `${hostname()}:${process.pid}`,
            service: this.opts.service,
            status: read(),
          };
          msg.respond(JSON.stringify(reply));
        } catch (e) {
          this.opts.log?.debug({ err: e }, 'ops status reply failed');
        }
      },
    });
    this.publish();
    this.timer = setInterval(() => this.publish(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops announcing; an instance that was announcing sends a last message marked `stopping`. */
  stop(): void {
    const wasRunning = this.timer !== null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (wasRunning && !this.stopped) {
      this.stopped = true;
      this.send();
    }
    this.stopped = true;
    try {
      this.ping?.unsubscribe();
      this.opsRequests?.unsubscribe();
    } catch {
      // connection already closed
    }
    this.ping = null;
    this.opsRequests = null;
  }
}
