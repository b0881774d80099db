import type { ResponseObject } from '@infer/contracts';
import type { Logger } from '@infer/service-kit';
import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { LOGGER, REDIS } from '../infra/tokens.js';
import { ModelGateway } from './model-gateway.service.js';
import { ResponseItemStore } from './response-items.js';
import { Routes } from './routes.js';

const utf8 = new TextDecoder();

/**
 * POST /v1/responses: served by the chat-service for models with the `responses` capability. With
 * `stream: true` the answer is the Responses event sequence ending with `response.completed` (typed
 * framing: `event:` + `data:`, no [DONE]). `item_reference` input items are resolved from the output
 * items kept for the member (response-items.ts) before the request goes on, and the output items of
 * each answer are kept (unless `store: false`) before it reaches the client.
 */
@Controller('v1')
export class ResponsesController {
  private readonly items: ResponseItemStore;

  constructor(
    @Inject(ModelGateway) private readonly gateway: ModelGateway,
    @Inject(REDIS) redis: Redis,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    this.items = new ResponseItemStore(redis);
  }

  @Post('responses')
  @HttpCode(200)
  async create(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const memberId = req.auth?.memberId;
    if (!memberId) return this.gateway.handle(Routes.responses, req, reply);
    const input = await this.items.resolve(memberId, req.body);
    const keep = async (response: ResponseObject) => {
      try {
        await this.items.keep(memberId, response);
      } catch (err) {
        this.log.warn({ err }, 'could not keep the output items of a response');
      }
    };
    return this.gateway.handle(
      Routes.responses,
      req,
      reply,
      input,
      async (data) => {
        await keep(data as ResponseObject);
        return data;
      },
      (payload) => {
        const json = utf8.decode(payload);
        if (!json.startsWith('{"type":"response.completed"')) return undefined;
        return keep((JSON.parse(json) as { response: ResponseObject }).response);
      },
    );
  }
}
