import {
  AnthropicCountTokensRequestSchema,
  AnthropicMessagesRequestSchema,
  type CatalogEntry,
  type ChatServiceBody,
  parseOrThrow,
} from '@infer/contracts';
import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GovernedCall } from '../call/governed-call.js';
import type { WireFormat } from '../call/wire.js';
import { CatalogService } from '../catalog/catalog.service.js';
import { workIdOf } from '../common/request-id.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { estimatePromptTokens } from '../limits/estimate.js';
import { type ModelRoute, Routes, routeCaller } from '../openai/routes.js';
import { TRACE_ID_HEADER } from '../telemetry/http-tracing.js';
import { COUNT_TOKENS_WIRE, messagesWire } from './messages-wire.js';
import { refuseUnsupported, toChatRequest, toCountRequest } from './translate-request.js';

/**
 * The Anthropic Messages front door: `POST /v1/messages` (Claude Code adds `?beta=true`) and
 * `POST /v1/messages/count_tokens`. It validates Anthropic's request, resolves the model (aliases
 * too: the translation needs its reasoning switch), translates the request onto the chat body
 * (translate-request.ts) and runs it through the one governed call (call/governed-call.ts: admit,
 * envelope, dispatch to the chat-service, relay, settle; usage under the endpoint `/v1/messages`) with
 * its own wire shape (messages-wire.ts: the Message object, Anthropic's stream events and error event).
 * Errors before the stream starts are thrown to the gateway's filter, which answers in Anthropic's shape
 * on these paths (common/send-error.ts), as it does for auth and body-parser failures that never reach
 * this controller. `anthropic-version` and `anthropic-beta` are accepted whatever their value: the wire
 * format served is 2023-06-01's, and betas ask for nothing we must do.
 */
@Controller('v1')
export class MessagesController {
  constructor(
    @Inject(GovernedCall) private readonly call: GovernedCall,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post('messages')
  @HttpCode(200)
  async create(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    void reply.header('request-id', req.id);
    const route = Routes.messages;
    const { entry, body } = this.translate(
      route,
      req,
      reply,
      (raw) => parseOrThrow(AnthropicMessagesRequestSchema, raw),
      (parsed, model) => ({ ...toChatRequest(parsed, model, parsed.stream === true), fit_max_tokens: true }),
    );
    // The chat body keeps the name the request used (an alias stays the alias): the Message echoes it.
    const estimate = body.stream === true ? estimatePromptTokens(body) : 0;
    await this.run(
      route,
      req,
      reply,
      entry,
      body,
      messagesWire(body.model, estimate, this.config.MESSAGES_PING_INTERVAL_MS),
    );
  }

  @Post('messages/count_tokens')
  @HttpCode(200)
  async countTokens(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    void reply.header('request-id', req.id);
    const route = Routes.messagesCountTokens;
    const { entry, body } = this.translate(
      route,
      req,
      reply,
      (raw) => parseOrThrow(AnthropicCountTokensRequestSchema, raw),
      toCountRequest,
    );
    await this.run(route, req, reply, entry, body, COUNT_TOKENS_WIRE);
  }

  /**
   * Tier check, Anthropic's validation, model resolution and translation; a refusal here is settled
   * (observers see it) and thrown.
   */
  private translate<A extends { model: string }>(
    route: ModelRoute,
    req: FastifyRequest,
    reply: FastifyReply,
    parse: (raw: unknown) => A,
    toChat: (parsed: A, model: CatalogEntry) => ChatServiceBody,
  ): { entry: CatalogEntry; body: ChatServiceBody } {
    const auth = routeCaller(route, req);
    try {
      refuseUnsupported(req.body);
      const parsed = parse(req.body ?? {});
      const entry = this.catalog.current.resolve(parsed.model, auth.tier, route.kinds, route.endpoint);
      return { entry, body: toChat(parsed, entry) };
    } catch (e) {
      this.call.refused(
        {
          kind: 'model',
          requestId: workIdOf(req),
          memberId: auth.memberId,
          keyId: auth.keyId,
          tier: auth.tier,
          endpoint: route.endpoint,
          traceId: reply.getHeader(TRACE_ID_HEADER) as string | undefined,
        },
        e,
      );
      throw e;
    }
  }

  private async run(
    route: ModelRoute,
    req: FastifyRequest,
    reply: FastifyReply,
    model: CatalogEntry,
    body: ChatServiceBody,
    wire: WireFormat,
  ): Promise<void> {
    const auth = routeCaller(route, req);
    const stream = route.streamable && body.stream === true;
    // Every limit of the request, checked and taken in one Redis step (429/402 with Retry-After).
    const call = await this.call.admitModel({
      kind: 'model',
      requestId: workIdOf(req),
      caller: auth,
      endpoint: route.endpoint,
      subject: this.config.MODEL_SUBJECT_PREFIX + route.subject,
      model,
      body,
      stream,
      deadlineMs: this.config.REQUEST_TIMEOUT_MS,
      traceId: reply.getHeader(TRACE_ID_HEADER) as string | undefined,
    });
    void reply.headers(call.admission.headers);
    await this.call.relay(call, req, reply, wire);
  }
}
