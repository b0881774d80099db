import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ModelGateway } from './model-gateway.service.js';
import { Routes } from './routes.js';

/** POST /v1/completions (legacy): served by the chat-service for models with the `completions` capability. */
@Controller('v1')
export class CompletionsController {
  constructor(@Inject(ModelGateway) private readonly gateway: ModelGateway) {}

  @Post('completions')
  @HttpCode(200)
  create(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.completions, req, reply);
  }
}
