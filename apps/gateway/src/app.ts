import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import multipart from '@fastify/multipart';
import {
  connectNats,
  createRedisClient,
  ensureUsageStream,
  failFastRedisOptions,
  watchRedis,
} from '@infer/rpc';
import { startIdleHeapTrim } from '@infer/runtime';
import { createLogger, type Logger, startTelemetry } from '@infer/telemetry';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { AppModule, type GatewayDeps } from './app.module.js';
import { newRequestId } from './common/request-id.js';
import { errorCodeOf, sendError } from './common/send-error.js';
import { type GatewayConfig, loadGatewayConfig } from './config.js';
import { serveConsole } from './console/serve-console.js';
import { AccessLog } from './http/access-log.js';
import { duplicateHostAnswer, handleClientError, hasDuplicateHost } from './http/client-error.js';
import { corsOptions } from './http/cors.js';
import { checkHttps } from './http/https-policy.js';
import { lazyChildLoggerFactory } from './http/lazy-logger.js';
import { securityHeaders } from './http/security-headers.js';
import { loadLimitsFile } from './limits/limits-file.js';
import { MetricsService } from './metrics/metrics.service.js';
import { openPersistence } from './persistence.js';
import { TRACE_ID_HEADER, tracedRequest, traceHttpServer } from './telemetry/http-tracing.js';
import { UsagePublisher } from './usage/usage-publisher.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Routes that answer without a key and over plain HTTP (probes and scrapers inside the cluster). */
const INFRA_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

export interface RunningGateway {
  app: NestFastifyApplication;
  url: string;
  config: GatewayConfig;
  close(): Promise<void>;
}

/** Starts the gateway: validated config, connections, Nest on Fastify, hooks, listen. */
export async function startGateway(env: NodeJS.ProcessEnv = process.env): Promise<RunningGateway> {
  const config = loadGatewayConfig(env);
  // OpenTelemetry, when the standard OTEL_* variables ask for it (off otherwise: nothing installed).
  const telemetry = startTelemetry('gateway', env);
  loadLimitsFile(config.LIMITS_FILE); // a bad limits file stops the start here, with a clear message
  const log = createLogger('gateway', config.LOG_LEVEL);
  const persistence = await openPersistence(config.DATABASE_URL, log);
  // Fails fast while Redis is unreachable: admission answers 503 at once, never queues (ADR 0003).
  const redis = watchRedis(
    createRedisClient(config.REDIS_URL, {
      lazyConnect: true,
      enableAutoPipelining: true,
      // Scripts are sent as they are called. The limits store already sends what one turn of the event
      // loop gathered as one EVALSHA per Redis slot, up to two calls in flight (ADR 0013); through the
      // auto-pipeline each call also paid a Pipeline object, one more event-loop turn (setImmediate), and
      // waited for the slot's previous pipeline to be answered (one pipeline in flight per slot).
      // The health ping (overview, /readyz) measures the server's own round trip, never a batch's.
      autoPipeliningIgnoredCommands: ['evalsha', 'eval', 'ping'],
      ...failFastRedisOptions(1_000),
    }),
    log,
    'gateway',
  );
  await redis.connect();
  const nc = await connectNats(config.NATS_URL, 'gateway');
  await ensureUsageStream(nc, config.USAGE_STREAM, [`${config.USAGE_SUBJECT_ROOT}.>`]);
  const metrics = new MetricsService();
  const deps: GatewayDeps = {
    config,
    log,
    prisma: persistence.prisma,
    pg: persistence.pool,
    redis,
    nc,
    keyStore: persistence.keyStore,
    catalogSource: persistence.catalogSource,
    metrics,
  };

  const tls =
    config.TLS_CERT_FILE && config.TLS_KEY_FILE
      ? { cert: readFileSync(config.TLS_CERT_FILE), key: readFileSync(config.TLS_KEY_FILE) }
      : undefined;
  const adapter = new FastifyAdapter({
    ...(tls ? { https: tls } : {}),
    trustProxy: config.TRUSTED_PROXIES.length ? config.TRUSTED_PROXIES : false,
    bodyLimit: config.BODY_LIMIT_BYTES,
    loggerInstance: log,
    logController: new LogController({ disableRequestLogging: true }),
    // req.log made on its first line, not for every request (http/lazy-logger.ts).
    childLoggerFactory: lazyChildLoggerFactory,
    // Requests Node's parser refuses (headers over 16 KiB, bad framing) get the error envelope too.
    clientErrorHandler: handleClientError,
    // A path parameter over 100 characters or with a broken %-escape, refused by the router before
    // any hook: the envelope too (414 / 400).
    frameworkErrors: (err: unknown, req: FastifyRequest, reply: FastifyReply) => sendError(req, reply, err),
    // close() ends idle keep-alive sockets instead of waiting out their timeout.
    forceCloseConnections: 'idle',
    genReqId: (req: IncomingMessage) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newRequestId();
    },
  } as ConstructorParameters<typeof FastifyAdapter>[0]);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(deps), adapter, {
    logger: ['error', 'warn'],
    // JSON bodies: Fastify's own parser, built once. Nest's (bodyParser: true) wraps the same
    // secure-json-parse function, but fetches it anew for every request (getDefaultJsonParser: a closure
    // and its options), reads the body as a Buffer copied by Buffer.concat and decoded again, and wraps
    // each call in two closures of its own (runBodyParser). Same limits, errors (FST_ERR_CTP_*) and
    // prototype-poisoning rules; form bodies keep Nest's parser, registered below as bodyParser: true did.
    bodyParser: false,
  });
  app.useBodyParser('application/x-www-form-urlencoded', { bodyLimit: config.BODY_LIMIT_BYTES });
  // Tracing (when on): before any route is registered, so that every handler runs in its request's
  // context (http-tracing.ts wraps each route's handler as it is added).
  traceHttpServer(app.getHttpServer(), app.getHttpAdapter().getInstance());
  // multipart/form-data for /audio/transcriptions and /images/edits. Files may pass the 25 MB limits
  // by one byte so that each endpoint can see `truncated` and name its own field in the 400.
  await app.register(multipart as never, {
    limits: { fileSize: 25 * 1024 * 1024 + 1, files: 8, fields: 32, fieldSize: 1024 * 1024 },
    throwFileSizeLimit: false,
  });
  // CORS (preflights answered before auth), per CORS_ORIGINS: http/cors.ts.
  const cors = corsOptions(config.CORS_ORIGINS);
  if (cors) app.enableCors(cors);
  // The operator console's build at /console/ (apps/console; same origin as /admin).
  await serveConsole(app, config.CONSOLE_DIR);
  const accessLog = new AccessLog(log);
  installHooks(app.getHttpAdapter().getInstance(), config, metrics, log, accessLog);
  app.enableShutdownHooks();
  await app.init();
  await app.listen(config.PORT, config.HOST);
  const addr = app.getHttpServer().address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  const url = `${tls ? 'https' : 'http'}://${host}:${port}`;
  log.info({ url, tls: Boolean(tls), insecureDev: config.ALLOW_INSECURE_HTTP }, 'gateway listening');

  const metricsServer =
    config.METRICS_PORT === undefined ? null : await serveMetrics(metrics, config.METRICS_PORT, config.HOST);
  const usage = app.get(UsagePublisher);
  // Memory back to the system once idle after the heap grew (V8's memory reducer does not run here).
  const heapTrim = startIdleHeapTrim();
  let closing: Promise<void> | undefined;
  return {
    app,
    url,
    config,
    close: () => {
      closing ??= (async () => {
        heapTrim.stop();
        metricsServer?.close();
        await app.close();
        accessLog.flush();
        await usage.close();
        await nc.drain().catch(() => undefined);
        redis.disconnect();
        await persistence.close();
        await telemetry.flush().catch(() => undefined);
      })();
      return closing;
    },
  };
}

/** Prometheus's /metrics on a port of its own (METRICS_PORT): plain HTTP, no key, nothing else there. */
async function serveMetrics(metrics: MetricsService, port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(port, host, ok));
  return server;
}

/** The security headers of each protocol, built once (the hook copies them into every reply). */
const SECURITY_HEADERS = { http: securityHeaders('http'), https: securityHeaders('https') };

function installHooks(
  f: FastifyInstance,
  config: GatewayConfig,
  metrics: MetricsService,
  log: Logger,
  accessLog: AccessLog,
): void {
  f.addHook('onRequest', (req, reply, done) => {
    if (hasDuplicateHost(req.raw.rawHeaders)) {
      // A framing error Node's parser lets through: refused like the others, and the connection closed.
      reply.header('connection', 'close');
      sendError(req, reply, duplicateHostAnswer());
      return;
    }
    const start = performance.now();
    const route = req.routeOptions.url ?? 'unmatched';
    // The request's trace (tracing on): its response header, and kept for the close event below (it
    // runs outside its context). Here rather than in a hook of its own: one Fastify hook fewer.
    const traceId = tracedRequest(req);
    if (traceId !== undefined) reply.header(TRACE_ID_HEADER, traceId);
    reply.header('x-request-id', req.id);
    void reply.headers(req.protocol === 'https' ? SECURITY_HEADERS.https : SECURITY_HEADERS.http);
    // The public API's requests in flight (the console's overview); the console's own routes are not.
    const api = route.startsWith('/v') || route === '/mcp';
    if (api) metrics.inflight++;
    reply.raw.once('close', () => {
      if (api) metrics.inflight--;
      const status = reply.raw.writableFinished ? reply.raw.statusCode : 499;
      const ms = performance.now() - start;
      const code = status >= 400 ? errorCodeOf(req) : undefined;
      metrics.observe(route, req.method, status, ms / 1000, code);
      // The access line: answers that went well only at debug (the metrics count them), so that the
      // success path writes no log line; refusals, failures and clients that left at info, like ones
      // grouped to a line per second (http/access-log.ts).
      const level = status < 400 ? 'debug' : 'info';
      if (!log.isLevelEnabled(level)) return;
      const line = {
        reqId: req.id,
        method: req.method,
        route,
        status,
        code,
        ms: Math.round(ms * 10) / 10,
        keyId: req.auth?.keyId,
        trace_id: traceId,
      };
      if (status < 400) log.debug(line, 'request');
      else accessLog.refused(line);
    });
    if (!INFRA_ROUTES.has(route)) {
      const refused = checkHttps({
        protocol: req.protocol,
        remoteAddress: req.socket.remoteAddress,
        allowInsecureLoopback: config.ALLOW_INSECURE_HTTP,
      });
      if (refused) {
        sendError(req, reply, refused);
        return;
      }
    }
    done();
  });
}
