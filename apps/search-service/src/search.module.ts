import { type EndFrame, type ServiceRequest, Subjects } from '@infer/contracts';
import type { HandlerContext, RpcHandler } from '@infer/rpc';
import { Controller, type DynamicModule, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { type SearchHandlerDeps, searchHandler } from './search/search.handler.js';

/** What the search controller is built from (engine, cache, clock, content fetching settings). */
export const SEARCH_DEPS = Symbol('SEARCH_DEPS');
/** Closes what the service opened (engine, PostgreSQL pool, Redis) when the app stops. */
export const SEARCH_CLOSER = Symbol('SEARCH_CLOSER');

/** The search service's NATS endpoint; the work lives in search/. */
@Controller()
export class SearchController {
  private readonly search: RpcHandler<unknown>;

  constructor(@Inject(SEARCH_DEPS) deps: SearchHandlerDeps) {
    this.search = searchHandler(deps);
  }

  @MessagePattern(Subjects.search)
  handle(@Payload() req: ServiceRequest<unknown>, @Ctx() ctx: HandlerContext): Promise<EndFrame> {
    return this.search(req, ctx);
  }
}

class Closer implements OnApplicationShutdown {
  constructor(private readonly close: () => Promise<void>) {}
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }
}

@Module({})
export class SearchServiceModule {
  static forRoot(deps: SearchHandlerDeps, close: () => Promise<void>): DynamicModule {
    return {
      module: SearchServiceModule,
      controllers: [SearchController],
      providers: [
        { provide: SEARCH_DEPS, useValue: deps },
        { provide: SEARCH_CLOSER, useValue: new Closer(close) },
      ],
    };
  }
}
