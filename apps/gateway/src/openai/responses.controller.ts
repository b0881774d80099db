import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ModelGateway } from './model-gateway.service.js';
import { Routes } from './routes.js';

/**
 * POST /v1/responses: served by the chat-service for models with the `responses` capability. With
 * `stream: true` the answer is the Responses event sequence ending with `response.completed` (typed
 * framing: `event:` + `data:`, no [DONE]).
 */
@Controller('v1')
export class ResponsesController {
  constructor(@Inject(ModelGateway) private readonly gateway: ModelGateway) {}

  @Post('responses')
  @HttpCode(200)
  create(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.responses, req, reply);
  }
}
