import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ModelGateway } from './model-gateway.service.js';
import { Routes } from './routes.js';

@Controller('v1')
export class ChatController {
  constructor(@Inject(ModelGateway) private readonly gateway: ModelGateway) {}

  @Post('chat/completions')
  @HttpCode(200)
  completions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.chatCompletions, req, reply);
  }
}
