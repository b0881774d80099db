import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ModelGateway } from './model-gateway.service.js';
import { Routes } from './routes.js';

/**
 * POST /v1/audio/speech: a JSON body in, the raw audio file out (no JSON wrapper), with the
 * Content-Type of its `response_format`. The audio-service sends the bytes inline (base64 in the end
 * frame) or, when they exceed a NATS message, parks them in Redis; ModelGateway answers either way.
 */
@Controller('v1')
export class SpeechController {
  constructor(@Inject(ModelGateway) private readonly gateway: ModelGateway) {}

  @Post('audio/speech')
  @HttpCode(200)
  speech(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gateway.handle(Routes.speech, req, reply);
  }
}
