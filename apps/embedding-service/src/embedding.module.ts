import {
  type EmbeddingRequest,
  type EndFrame,
  type RerankRequest,
  type ServiceRequest,
  Subjects,
} from '@infer/contracts';
import { type HandlerContext, type RpcHandler } from '@infer/rpc';
import { SERVICE_LOG } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { Controller, type DynamicModule, Inject, Module } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { BatcherPool, embeddingsHandler } from './embeddings/embeddings.handler.js';
import { builtinEmbeddingFactories, builtinRerankFactories } from './engines/builtin.js';
import type { EmbeddingEngine, RerankEngine } from './engines/engine.js';
import { EngineRegistry } from './engines/registry.js';
import { rerankHandler } from './rerank/rerank.handler.js';

/** Injection tokens of the two engine registries (one per capability). */
export const EMBEDDERS = Symbol('EMBEDDERS');
export const RANKERS = Symbol('RANKERS');

/**
 * The embedding service's NATS endpoints: embeddings (merged into engine batches by the BatcherPool)
 * and rerank. The work lives in embeddings/ and rerank/.
 */
@Controller()
export class EmbeddingController {
  private readonly embed: RpcHandler<EmbeddingRequest>;
  private readonly rank: RpcHandler<RerankRequest>;

  constructor(
    @Inject(EMBEDDERS) embedders: EngineRegistry<EmbeddingEngine>,
    @Inject(RANKERS) rankers: EngineRegistry<RerankEngine>,
    @Inject(BatcherPool) pool: BatcherPool,
  ) {
    this.embed = embeddingsHandler(embedders, pool);
    this.rank = rerankHandler(rankers);
  }

  @MessagePattern(Subjects.embeddings)
  embeddings(
    @Payload() req: ServiceRequest<EmbeddingRequest>,
    @Ctx() ctx: HandlerContext,
  ): Promise<EndFrame> {
    return this.embed(req, ctx);
  }

  @MessagePattern(Subjects.rerank)
  rerank(@Payload() req: ServiceRequest<RerankRequest>, @Ctx() ctx: HandlerContext): Promise<EndFrame> {
    return this.rank(req, ctx);
  }
}

@Module({})
export class EmbeddingServiceModule {
  /** Registries to use instead of the built-in engines (tests register their own). */
  static forRoot(opts: {
    embedders?: EngineRegistry<EmbeddingEngine>;
    rankers?: EngineRegistry<RerankEngine>;
  }): DynamicModule {
    return {
      module: EmbeddingServiceModule,
      controllers: [EmbeddingController],
      providers: [
        { provide: BatcherPool, useValue: new BatcherPool() },
        {
          provide: EMBEDDERS,
          inject: [SERVICE_LOG],
          useFactory: (log: Logger) =>
            opts.embedders ?? new EngineRegistry('embeddings', log, builtinEmbeddingFactories),
        },
        {
          provide: RANKERS,
          inject: [SERVICE_LOG],
          useFactory: (log: Logger) =>
            opts.rankers ?? new EngineRegistry('rerank', log, builtinRerankFactories),
        },
      ],
    };
  }
}
