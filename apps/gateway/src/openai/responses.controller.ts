import { type ResponseObject, ResponseRequestSchema } from '@infer/contracts';
import type { SqlRunner } from '@infer/persistence/lazy';
import type { Logger } from '@infer/telemetry';
import {
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  type OnModuleDestroy,
  type OnModuleInit,
  Param,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { workIdOf } from '../common/request-id.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER, PG, REDIS } from '../infra/tokens.js';
import { HostedSearch } from '../search/hosted-search.service.js';
import { ModelGateway } from './model-gateway.service.js';
import { ResponseItemStore } from './response-items.js';
import { Routes } from './routes.js';
import { deleteExpiredResponses, pageItems, StoredResponses } from './stored-responses.js';

const utf8 = new TextDecoder();
/** How often each gateway runs the retention job (one at a time across replicas: advisory lock). */
const RETENTION_EVERY_MS = 15 * 60_000;

/**
 * POST /v1/responses: served by the chat-service for models with the `responses` capability. With
 * `stream: true` the answer is the Responses event sequence ending with `response.completed` (typed
 * framing: `event:` + `data:`, no [DONE]). Before the request goes on, `previous_response_id` is
 * replaced by the stored response's items (stored-responses.ts, PostgreSQL, per member) and
 * `item_reference` items by the output items kept in Redis (response-items.ts); each answer (unless
 * `store: false`) is stored with its input items before it reaches the client.
 * GET/DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items read the member's own.
 */
@Controller('v1')
export class ResponsesController implements OnModuleInit, OnModuleDestroy {
  private readonly items: ResponseItemStore;
  private readonly stored: StoredResponses;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(ModelGateway) private readonly gateway: ModelGateway,
    @Inject(REDIS) redis: Redis,
    @Inject(PG) private readonly pg: SqlRunner,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(HostedSearch) private readonly hosted: HostedSearch,
  ) {
    this.items = new ResponseItemStore(redis);
    this.stored = new StoredResponses(pg, config.RESPONSES_RETENTION_DAYS);
  }

  onModuleInit(): void {
    this.timer = setInterval(() => {
      deleteExpiredResponses(this.pg).catch((err: unknown) =>
        this.log.warn({ err }, 'stored responses retention job failed'),
      );
    }, RETENTION_EVERY_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  @Post('responses')
  @HttpCode(200)
  async create(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const auth = req.auth;
    const memberId = auth?.memberId;
    // An invalid body goes on as it is: the governed call refuses it (the 400 naming the field) and
    // its observers see the refusal. A valid one is read from its parsed form only.
    const parsed = ResponseRequestSchema.safeParse(req.body ?? {});
    if (!memberId || !auth || !parsed.success) return this.gateway.handle(Routes.responses, req, reply);
    const chain = await this.stored.continue(memberId, parsed.data);
    const input = await this.items.resolve(memberId, chain.body);
    const keep = async (response: ResponseObject) => {
      try {
        await this.items.keep(memberId, response);
        if (chain.items) await this.stored.keep(memberId, response, chain.items, chain.previous);
      } catch (err) {
        this.log.warn({ err }, 'could not store a response');
      }
    };
    // The hosted web_search tool: the chat-service's searches for this call come back to this gateway.
    const searches = parsed.data.tools?.some((t) => t.type.startsWith('web_search'))
      ? this.hosted.allow(workIdOf(req), auth)
      : null;
    try {
      return await this.gateway.handle(
        Routes.responses,
        req,
        reply,
        input,
        async (data) => {
          await keep(data as ResponseObject);
          return chain.previous ? { ...(data as object), previous_response_id: chain.previous } : data;
        },
        (payload) => {
          const json = utf8.decode(payload);
          if (!json.startsWith('{"type":"response.completed"')) return undefined;
          return keep((JSON.parse(json) as { response: ResponseObject }).response);
        },
        searches ? this.hosted.subject : undefined,
      );
    } finally {
      searches?.();
    }
  }

  @Get('responses/:id')
  async retrieve(@Req() req: FastifyRequest, @Param('id') id: string): Promise<unknown> {
    return (await this.stored.get(req.auth?.memberId ?? '', id)).response;
  }

  @Delete('responses/:id')
  async remove(@Req() req: FastifyRequest, @Param('id') id: string): Promise<unknown> {
    await this.stored.get(req.auth?.memberId ?? '', id);
    await this.stored.repo.delete(req.auth?.memberId ?? '', id);
    return { id, object: 'response', deleted: true };
  }

  @Get('responses/:id/input_items')
  async inputItems(
    @Req() req: FastifyRequest,
    @Param('id') id: string,
    @Query() q: Record<string, unknown>,
  ): Promise<unknown> {
    const r = await this.stored.get(req.auth?.memberId ?? '', id);
    return pageItems(r.inputItems, q);
  }
}
