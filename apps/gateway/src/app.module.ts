import { createFileStore } from '@infer/image-store';
import type { Db, SqlRunner } from '@infer/persistence/lazy';
import { NatsRpcClientProxy } from '@infer/rpc';
import { type Logger } from '@infer/telemetry';
import type { NatsConnection } from '@nats-io/transport-node';
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { AccountController } from './account/account.controller.js';
import { AccountGuard } from './account/account.guard.js';
import { AccountService } from './account/account.service.js';
import { AccountAccess } from './account/account-access.service.js';
import { ADMIN_CONTROLLERS, ADMIN_PROVIDERS } from './admin/admin.module.js';
import { AuthGuard } from './auth/auth.guard.js';
import { KeyCache, type KeyStore } from './auth/key-cache.js';
import { BatchesController } from './batch/batches.controller.js';
import { FilesController } from './batch/files.controller.js';
import { CALL_PROVIDERS } from './call/call.providers.js';
import { InteractivePressure, PRESSURE_KEY_SUFFIX } from './call/observers/pressure.js';
import { TrafficRecorder } from './call/observers/traffic.js';
import type { CatalogSource } from './catalog/catalog.js';
import { CatalogService } from './catalog/catalog.service.js';
import { ErrorsFilter } from './common/errors.filter.js';
import { GATEWAY_CONFIG, type GatewayConfig } from './config.js';
import { BackingChecks } from './health/backing.service.js';
import { HealthController } from './health/health.controller.js';
import { CLOCK, systemClock } from './images/clock.js';
import { ImageDelivery } from './images/image-delivery.service.js';
import { BullQueues } from './infra/bull-queues.service.js';
import { CATALOG_SOURCE, FILE_STORE, LOGGER, NATS, PG, PRISMA, REDIS } from './infra/tokens.js';
import { LimitsService } from './limits/limits.service.js';
import { McpEndpoint } from './mcp/mcp.endpoint.js';
import { MessagesController } from './messages/messages.controller.js';
import { MetricsController } from './metrics/metrics.controller.js';
import { MetricsService } from './metrics/metrics.service.js';
import { ApiDocsController } from './openai/api-docs.controller.js';
import { ChatController } from './openai/chat.controller.js';
import { CompletionsController } from './openai/completions.controller.js';
import { EmbeddingsController } from './openai/embeddings.controller.js';
import { ImagesController } from './openai/images.controller.js';
import { ModelGateway } from './openai/model-gateway.service.js';
import { ModelsController } from './openai/models.controller.js';
import { OpenApiController } from './openai/openapi.controller.js';
import { RerankController } from './openai/rerank.controller.js';
import { ResponsesController } from './openai/responses.controller.js';
import { SpeechController } from './openai/speech.controller.js';
import { TranscriptionsController } from './openai/transcriptions.controller.js';
import { HostedSearch } from './search/hosted-search.service.js';
import { SearchController } from './search/search.controller.js';
import { SearchGateway } from './search/search.service.js';
import { SelfUsageService } from './usage/self-usage.service.js';
import { UsageController } from './usage/usage.controller.js';
import { UsagePublisher } from './usage/usage-publisher.js';

/** Connections and stores made before Nest starts (see app.ts), handed in as providers. */
export interface GatewayDeps {
  config: GatewayConfig;
  log: Logger;
  /** Prisma's client, made on first use (infra/persistence.ts). */
  prisma: Db;
  /** The pg pool: /readyz and the limits' ledger totals. */
  pg: SqlRunner;
  redis: Redis;
  nc: NatsConnection;
  keyStore: KeyStore;
  catalogSource: CatalogSource;
  metrics: MetricsService;
}

/** Every controller of the gateway (the admin room's from admin/admin.module.ts). */
export const GATEWAY_CONTROLLERS = [
  HealthController,
  MetricsController,
  OpenApiController,
  ApiDocsController,
  ModelsController,
  ChatController,
  MessagesController,
  CompletionsController,
  ResponsesController,
  SearchController,
  SpeechController,
  TranscriptionsController,
  EmbeddingsController,
  RerankController,
  ImagesController,
  FilesController,
  BatchesController,
  UsageController,
  AccountController,
  ...ADMIN_CONTROLLERS,
];

@Module({})
export class AppModule {
  static forRoot(deps: GatewayDeps): DynamicModule {
    return {
      module: AppModule,
      // With METRICS_PORT the metrics are served there only (app.ts serveMetrics), never on PORT.
      controllers:
        deps.config.METRICS_PORT === undefined
          ? GATEWAY_CONTROLLERS
          : GATEWAY_CONTROLLERS.filter((c) => c !== MetricsController),
      providers: [
        ...ADMIN_PROVIDERS,
        SelfUsageService,
        AccountAccess,
        AccountGuard,
        AccountService,
        ...CALL_PROVIDERS,
        BullQueues,
        BackingChecks,
        // Files API bytes (FILE_STORE=fs|s3), shared with the batch runner.
        { provide: FILE_STORE, useFactory: () => createFileStore(deps.config) },
        // Interactive requests in flight, reported to Redis for the batch lane (batch/pressure.ts).
        {
          provide: InteractivePressure,
          useFactory: () => {
            const p = new InteractivePressure(
              deps.redis,
              `${deps.config.BULLMQ_PREFIX}:${PRESSURE_KEY_SUFFIX}`,
            );
            p.start();
            return p;
          },
        },
        { provide: GATEWAY_CONFIG, useValue: deps.config },
        { provide: LOGGER, useValue: deps.log },
        { provide: PRISMA, useValue: deps.prisma },
        { provide: PG, useValue: deps.pg },
        { provide: REDIS, useValue: deps.redis },
        { provide: NATS, useValue: deps.nc },
        { provide: CATALOG_SOURCE, useValue: deps.catalogSource },
        { provide: MetricsService, useValue: deps.metrics },
        // Factories, not values: nothing is made (no timer started) before Nest builds the module.
        {
          provide: KeyCache,
          useFactory: () =>
            new KeyCache(deps.keyStore, deps.config.KEY_CACHE_TTL_MS, Date.now, {
              staleMs: deps.config.KEY_CACHE_STALE_MS,
              missesPerWindow: deps.config.INVALID_KEY_LIMIT,
            }),
        },
        { provide: NatsRpcClientProxy, useFactory: () => new NatsRpcClientProxy(deps.nc) },
        {
          provide: UsagePublisher,
          useFactory: () =>
            new UsagePublisher(deps.nc, deps.log, deps.config.USAGE_SUBJECT_ROOT, {
              batchMax: deps.config.USAGE_BATCH_MAX,
            }),
        },
        {
          // Per-minute per-model traffic for the console's overview, written to Redis once a second.
          provide: TrafficRecorder,
          useFactory: () =>
            new TrafficRecorder(deps.redis, deps.config.CONSOLE_REDIS_PREFIX, 1000, (err) =>
              deps.log.warn({ err }, 'could not write the overview traffic counters'),
            ),
        },
        CatalogService,
        LimitsService,
        // Per-member and per-key cost and budget reads (GET /v1/usage, the console).
        ModelGateway,
        SearchGateway,
        HostedSearch,
        // The clock of the signed image URLs: tests replace its `now` (test/integration/images.spec.ts).
        { provide: CLOCK, useFactory: systemClock },
        ImageDelivery,
        // POST /mcp, registered on Fastify itself (see mcp.endpoint.ts for why).
        McpEndpoint,
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_FILTER, useClass: ErrorsFilter },
      ],
    };
  }
}
