import { createFileStore } from '@infer/image-store';
import type { Db, SqlRunner } from '@infer/persistence/lazy';
import { type Logger, NatsRpcClientProxy } from '@infer/service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { AdminController } from './admin/usage/usage-report.controller.js';
import { AdminInvalidation } from './admin/invalidation.js';
import { BullQueues } from './admin/queues/bull-queues.js';
import { QueuesAdminController } from './admin/queues/queues.controller.js';
import { AuthGuard } from './auth/auth.guard.js';
import { KeyCache, type KeyStore } from './auth/key-cache.js';
import { BatchesAdminController } from './admin/batches/batches.controller.js';
import { BatchesController } from './batch/batches.controller.js';
import { FilesController } from './batch/files.controller.js';
import { InteractivePressure, PRESSURE_KEY_SUFFIX } from './batch/pressure.js';
import type { CatalogSource } from './catalog/catalog.js';
import { CatalogService } from './catalog/catalog.service.js';
import { ErrorsFilter } from './common/errors.filter.js';
import { GATEWAY_CONFIG, type GatewayConfig } from './config.js';
import { HealthController } from './health/health.controller.js';
import { CLOCK, systemClock } from './images/clock.js';
import { ImageDelivery } from './images/image-delivery.service.js';
import { CATALOG_SOURCE, FILE_STORE, LOGGER, NATS, PG, PRISMA, REDIS } from './infra/tokens.js';
import { LimitsService } from './limits/limits.service.js';
import { McpEndpoint } from './mcp/mcp.endpoint.js';
import { MetricsController } from './metrics/metrics.controller.js';
import { MetricsService } from './metrics/metrics.service.js';
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
import { AdminAccess } from './admin/access/admin-access.service.js';
import { MembersAdminController } from './admin/members/members.controller.js';
import { OidcController } from './admin/oidc/oidc.controller.js';
import { OperatorsController } from './admin/operators/operators.controller.js';
import { QueueJobsController } from './admin/queues/queue-jobs.controller.js';
import { QuotasController } from './admin/quotas/quotas.controller.js';
import { SearchIndexAdminController } from './admin/search-index/search-index.controller.js';
import { SessionController } from './admin/session/session.controller.js';
import { UsageRollupsController } from './admin/usage/usage-rollups.controller.js';
import { OverviewController } from './admin/overview/overview.controller.js';
import { OverviewService } from './admin/overview/overview.service.js';
import { TrafficRecorder } from './call/observers/traffic.js';
import { SearchController } from './search/search.controller.js';
import { SearchGateway } from './search/search.service.js';
import { SearchAdminController } from './admin/search-index/search-documents.controller.js';
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

@Module({})
export class AppModule {
  static forRoot(deps: GatewayDeps): DynamicModule {
    return {
      module: AppModule,
      controllers: [
        HealthController,
        MetricsController,
        OpenApiController,
        ModelsController,
        ChatController,
        CompletionsController,
        ResponsesController,
        AdminController,
        SearchController,
        SearchAdminController,
        SpeechController,
        TranscriptionsController,
        QueuesAdminController,
        EmbeddingsController,
        RerankController,
        ImagesController,
        SessionController,
        OidcController,
        OperatorsController,
        MembersAdminController,
        QueueJobsController,
        UsageRollupsController,
        SearchIndexAdminController,
        OverviewController,
        QuotasController,
        FilesController,
        BatchesController,
        BatchesAdminController,
      ],
      providers: [
        BullQueues,
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
        {
          provide: KeyCache,
          useValue: new KeyCache(deps.keyStore, deps.config.KEY_CACHE_TTL_MS, Date.now, {
            staleMs: deps.config.KEY_CACHE_STALE_MS,
            missesPerWindow: deps.config.INVALID_KEY_LIMIT,
          }),
        },
        { provide: NatsRpcClientProxy, useValue: new NatsRpcClientProxy(deps.nc) },
        {
          provide: UsagePublisher,
          useValue: new UsagePublisher(deps.nc, deps.log, deps.config.USAGE_SUBJECT_ROOT, {
            batchMax: deps.config.USAGE_BATCH_MAX,
          }),
        },
        {
          // Per-minute per-model traffic for the console's overview, written to Redis once a second.
          provide: TrafficRecorder,
          useValue: new TrafficRecorder(deps.redis, deps.config.CONSOLE_REDIS_PREFIX, 1000, (err) =>
            deps.log.warn({ err }, 'could not write the overview traffic counters'),
          ),
        },
        OverviewService,
        CatalogService,
        // Admin changes reach every gateway replica at once (core NATS; TTLs are the fallback).
        AdminInvalidation,
        LimitsService,
        ModelGateway,
        SearchGateway,
        // The clock of the signed image URLs: tests replace its `now` (test/integration/images.spec.ts).
        { provide: CLOCK, useFactory: systemClock },
        ImageDelivery,
        // Who may use /admin: ADMIN_TOKEN or an operator console session (apps/gateway/src/operators).
        AdminAccess,
        // POST /mcp, registered on Fastify itself (see mcp.endpoint.ts for why).
        McpEndpoint,
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_FILTER, useClass: ErrorsFilter },
      ],
    };
  }
}
