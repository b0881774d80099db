import 'reflect-metadata';
import type { RpcServer } from '@infer/rpc';
import { connectNats, type NatsConnection, NatsRpcTransport, PassThroughRpcFilter } from '@infer/rpc';
import { createLogger, type Logger, NestPinoLogger, startTelemetry } from '@infer/telemetry';
import {
  type DynamicModule,
  Global,
  type INestApplicationContext,
  type INestMicroservice,
  Module,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { envInt, NatsUrlSchema, parseConfig } from '../config.js';
import { startIdleHeapTrim } from '../memory.js';
import { StatusPublisher, serviceVersion } from '../status.js';
import { OpsServer, type ReadinessCheck, runReadinessChecks } from './ops-server.js';

/** Injection tokens that every service module can use. */
export const SERVICE_LOG = Symbol('SERVICE_LOG');
export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

export const ServiceEnvSchema = z.object({
  NATS_URL: NatsUrlSchema,
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Level of the JSON logs (pino).'),
  OPS_PORT: z
    .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).max(65535).optional())
    .describe(
      'Port of the ops server (/healthz, /readyz, /metrics); unset: no ops server; 0: any free port.',
    ),
  OPS_HOST: z.string().default('0.0.0.0').describe('Listening address of the ops server.'),
  SHUTDOWN_GRACE_MS: envInt(10_000).describe(
    'On SIGTERM, how long work in flight may finish before it is cut short with a retryable 503 (ms); ' +
      'streams keep their usage, BullMQ jobs in progress go back to the queue.',
  ),
});
export type ServiceEnv = z.output<typeof ServiceEnvSchema>;

export interface ServiceBootstrapOptions {
  /** The app's name (logs, NATS connection name, metrics label). */
  name: string;
  /** The app's root module: its controllers carry the `@MessagePattern`s, its providers the rest. */
  module: Type<unknown> | DynamicModule;
  /** Environment (ServiceEnvSchema); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Stop on SIGTERM/SIGINT and exit (main.ts: true; in-process tests: false). */
  installSignalHandlers?: boolean;
  /** A logger to use instead of a new one (e.g. a child with the role). */
  log?: Logger;
  /** Readiness checks besides NATS (engines loaded, Redis reachable ...), given the started app. */
  checks?: (app: INestApplicationContext) => ReadinessCheck[];
  /** The service's own Prometheus registries, served on the ops server's /metrics. */
  registries?: Registry[];
  /**
   * Application contexts (worker roles) only: announce the instance on NATS for the console's
   * overview (StatusPublisher, on a connection of its own, opened in the background so that a
   * worker never waits for NATS). Default true; the ledger writer announces itself.
   */
  announce?: boolean;
  /** The service name announced (default `name`), e.g. `image-worker` for a worker-only role. */
  statusService?: string;
  /** Tests only: prepended to the status subjects (as subjectPrefix is to the RPC ones). */
  statusSubjectPrefix?: string;
}

export interface NatsServiceOptions extends ServiceBootstrapOptions {
  /** The NATS queue group its replicas share (QueueGroups in contracts). */
  queue: string;
  /** Tests only: prepended to every subject the service answers. */
  subjectPrefix?: string;
}

/** A running service process: the Nest app, and for NATS-facing ones, the connection and RPC server. */
export interface RunningService {
  app: INestMicroservice;
  nc: NatsConnection;
  rpc: RpcServer;
  log: Logger;
  /** The subjects answered, with the prefix applied. */
  listening: string[];
  /** Base URL of the ops server, when OPS_PORT is set. */
  opsUrl: string | null;
  /** Graceful stop: leaves the queue group, lets work finish for up to `graceMs`, closes providers. */
  stop(graceMs?: number): Promise<void>;
}

export interface RunningContext {
  app: INestApplicationContext;
  log: Logger;
  opsUrl: string | null;
  stop(): Promise<void>;
}

/** Provides SERVICE_LOG and NATS_CONNECTION to every module of a service app (and of a test module). */
@Global()
@Module({})
export class ServiceCoreModule {
  static forRoot(log: Logger, nc: NatsConnection | null = null): DynamicModule {
    return {
      module: ServiceCoreModule,
      providers: [
        { provide: SERVICE_LOG, useValue: log },
        { provide: NATS_CONNECTION, useValue: nc },
      ],
      exports: [SERVICE_LOG, NATS_CONNECTION],
    };
  }
}

function rootModule(
  log: Logger,
  nc: NatsConnection | null,
  app: Type<unknown> | DynamicModule,
): DynamicModule {
  @Module({})
  class ServiceRootModule {}
  return { module: ServiceRootModule, imports: [ServiceCoreModule.forRoot(log, nc), app] };
}

/** Tracks whether the NATS connection is up (not reconnecting, not closed). */
function natsCheck(nc: NatsConnection): ReadinessCheck {
  let up = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'staleConnection') up = false;
      else if (s.type === 'reconnect') up = true;
    }
  })().catch(() => undefined);
  return { name: 'nats', check: () => up && !nc.isClosed() && !nc.isDraining() };
}

function onSignals(stop: () => Promise<void>, graceMs: number, log: Logger): void {
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => {
      log.info({ signal: sig, graceMs }, 'shutting down');
      // The grace period plus a margin for closing connections; past it the process exits regardless.
      setTimeout(() => {
        log.error('shutdown took too long: exiting');
        process.exit(1);
      }, graceMs + 5_000).unref();
      stop().then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}

async function startOps(
  env: ServiceEnv,
  name: string,
  log: Logger,
  rpc: RpcServer | null,
  checks: ReadinessCheck[],
  registries: Registry[] | undefined,
): Promise<{ ops: OpsServer | null; url: string | null }> {
  if (env.OPS_PORT === undefined) return { ops: null, url: null };
  const ops = new OpsServer({
    service: name,
    port: env.OPS_PORT,
    host: env.OPS_HOST,
    log,
    rpc,
    checks,
    registries,
  });
  const url = await ops.start();
  return { ops, url };
}

/**
 * Starts a NATS-facing service as a NestJS microservice on the NATS RPC transport: validated env,
 * logger, NATS connection, the app module (controllers with `@MessagePattern`s, providers for engines,
 * queues, stores, config), the ops server when OPS_PORT is set. `stop()` (and SIGTERM/SIGINT when
 * installSignalHandlers) drains: the service leaves its queue group, work in flight gets
 * SHUTDOWN_GRACE_MS to finish and is then cut short (streams end with a retryable error that carries
 * their usage), providers close (engines, queues, Redis), and the NATS connection is drained.
 */
export async function startMicroservice(opts: NatsServiceOptions): Promise<RunningService> {
  const env = parseConfig(opts.name, ServiceEnvSchema, opts.env);
  startTelemetry(opts.name, opts.env ?? process.env);
  const log = opts.log ?? createLogger(opts.name, env.LOG_LEVEL);
  const nc = await connectNats(env.NATS_URL, opts.name);
  let app: INestMicroservice | null = null;
  let transport: NatsRpcTransport | null = null;
  let ops: OpsServer | null = null;
  let opsUrl: string | null = null;
  let checks: ReadinessCheck[] = [];
  try {
    transport = new NatsRpcTransport({
      nc,
      queue: opts.queue,
      log,
      subjectPrefix: opts.subjectPrefix,
      drainMs: env.SHUTDOWN_GRACE_MS,
    });
    app = await NestFactory.createMicroservice(rootModule(log, nc, opts.module), {
      strategy: transport,
      logger: new NestPinoLogger(log),
      abortOnError: false,
    });
    app.useGlobalFilters(new PassThroughRpcFilter());
    await app.listen();
    const started = app;
    checks = [natsCheck(nc), ...(opts.checks?.(started) ?? [])];
    ({ ops, url: opsUrl } = await startOps(env, opts.name, log, transport.rpc, checks, opts.registries));
  } catch (e) {
    await app?.close().catch(() => undefined);
    await nc.close().catch(() => undefined);
    throw e;
  }
  const rpc = transport.rpc;
  const nest = app;
  // Announces the instance (service, version, in flight, load) to the gateways' overview.
  const status = new StatusPublisher(nc, {
    service: opts.name,
    inflight: () => rpc.inflightCount,
    version: serviceVersion(opts.env ?? process.env),
    subjectPrefix: opts.subjectPrefix,
    log,
    // The same checks as its /readyz (with or without an ops server).
    readiness: () => runReadinessChecks(checks),
  });
  status.start();
  // Memory back to the system once idle after a burst (V8's memory reducer does not run: memory.ts).
  const heapTrim = startIdleHeapTrim();
  log.info({ subjects: transport.subjects, queue: opts.queue, ops: opsUrl }, 'service ready');
  let stopping: Promise<void> | undefined;
  const stop = (graceMs?: number) => {
    stopping ??= (async () => {
      heapTrim.stop();
      status.stop();
      ops?.shuttingDown();
      if (graceMs !== undefined) await rpc.drain(graceMs);
      await nest.close();
      await nc.drain().catch(() => undefined);
      await ops?.close();
      log.info('service stopped');
    })();
    return stopping;
  };
  if (opts.installSignalHandlers) onSignals(stop, env.SHUTDOWN_GRACE_MS, log);
  return { app: nest, nc, rpc, log, listening: transport.subjects, opsUrl, stop };
}

/**
 * Starts a process role that answers nothing over NATS (a BullMQ worker, a stream consumer) as a Nest
 * application context: its providers start in onApplicationBootstrap and stop in their shutdown hooks;
 * the ops server runs when OPS_PORT is set.
 */
export async function startAppContext(opts: ServiceBootstrapOptions): Promise<RunningContext> {
  const env = parseConfig(opts.name, ServiceEnvSchema, opts.env);
  startTelemetry(opts.name, opts.env ?? process.env);
  const log = opts.log ?? createLogger(opts.name, env.LOG_LEVEL);
  const app = await NestFactory.createApplicationContext(rootModule(log, null, opts.module), {
    logger: new NestPinoLogger(log),
    abortOnError: false,
  });
  let ops: OpsServer | null = null;
  let opsUrl: string | null = null;
  let checks: ReadinessCheck[] = [];
  try {
    await app.init();
    checks = opts.checks?.(app) ?? [];
    ({ ops, url: opsUrl } = await startOps(env, opts.name, log, null, checks, opts.registries));
  } catch (e) {
    await app.close().catch(() => undefined);
    throw e;
  }
  // The worker role's presence on the console's overview (no NATS traffic otherwise).
  let statusNc: NatsConnection | null = null;
  let status: StatusPublisher | null = null;
  let stopped = false;
  if (opts.announce !== false) {
    connectNats(env.NATS_URL, `${opts.name}-status`).then(
      (nc) => {
        if (stopped) {
          void nc.close();
          return;
        }
        statusNc = nc;
        status = new StatusPublisher(nc, {
          service: opts.statusService ?? opts.name,
          inflight: () => 0,
          version: serviceVersion(opts.env ?? process.env),
          subjectPrefix: opts.statusSubjectPrefix,
          log,
          readiness: () => runReadinessChecks(checks),
        });
        status.start();
      },
      (err: unknown) => log.warn({ err }, 'no NATS connection for the status messages'),
    );
  }
  const heapTrim = startIdleHeapTrim();
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      stopped = true;
      heapTrim.stop();
      status?.stop();
      await statusNc?.close().catch(() => undefined);
      ops?.shuttingDown();
      await app.close();
      await ops?.close();
      log.info('service stopped');
    })();
    return stopping;
  };
  if (opts.installSignalHandlers) onSignals(stop, env.SHUTDOWN_GRACE_MS, log);
  return { app, log, opsUrl, stop };
}
