import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ModelGateway } from './model-gateway.service.js';
import { Routes } from './routes.js';

/**
 * POST /v1/rerank and its alias POST /v2/rerank (the Cohere v2 path, outside /v1, so that Cohere-style
 * clients work unchanged), served by the embedding-service.
 */
@Controller()
export class RerankController {
  constructor(@Inject(ModelGateway) private readonly gateway: ModelGateway) {}

  @Post('v1/rerank')
  @HttpCode(200)
  rerank(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.rerank, req, reply);
  }

  @Post('v2/rerank')
  @HttpCode(200)
  rerankV2(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.rerankV2, req, reply);
  }
}
