import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ModelGateway } from './model-gateway.service.js';
import { Routes } from './routes.js';

/** POST /v1/embeddings, served by the embedding-service. */
@Controller('v1')
export class EmbeddingsController {
  constructor(@Inject(ModelGateway) private readonly gateway: ModelGateway) {}

  @Post('embeddings')
  @HttpCode(200)
  embeddings(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.embeddings, req, reply);
  }
}
