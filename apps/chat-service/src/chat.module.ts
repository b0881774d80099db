import {
  ApiError,
  type ChatCompletionRequest,
  type ChatServiceBody,
  type CompletionRequest,
  type EndFrame,
  type HostedSearchAnswer,
  type HostedSearchAsk,
  type ResponseRequest,
  type SearchResult,
  type ServiceRequest,
  Subjects,
} from '@infer/contracts';
import { type HandlerContext, type NatsConnection, type RpcHandler } from '@infer/rpc';
import { NATS_CONNECTION, SERVICE_LOG } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { Controller, type DynamicModule, Inject, Module } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { chatCompletionsHandler } from './chat/chat.handler.js';
import { countTokensHandler } from './chat/count-tokens.handler.js';
import type { MediaOptions } from './chat/media.js';
import { completionsHandler } from './completions/completions.handler.js';
import { type ChatServiceEnv, mediaOptions, reasoningSeal } from './config.js';
import { builtinEngineFactories } from './engines/builtin.js';
import { EngineRegistry } from './engines/registry.js';
import type { ReasoningSeal } from './responses/reasoning-seal.js';
import { responsesHandler } from './responses/responses.handler.js';

export const MEDIA_OPTIONS = Symbol('MEDIA_OPTIONS');
export const REASONING_SEAL = Symbol('REASONING_SEAL');

/**
 * The chat service's NATS endpoints. Each method answers one subject (in the chat-service queue
 * group): the envelope is the payload, the context carries the abort signal and the stream emitter.
 * The work itself lives in the handler modules beside (chat/, completions/, responses/).
 */
@Controller()
export class ChatController {
  private readonly chat: RpcHandler<ChatServiceBody>;
  private readonly completion: RpcHandler<CompletionRequest>;
  private readonly response: RpcHandler<ResponseRequest>;
  private readonly count: RpcHandler<ChatCompletionRequest>;

  constructor(
    @Inject(EngineRegistry) engines: EngineRegistry,
    @Inject(MEDIA_OPTIONS) media: MediaOptions,
    @Inject(REASONING_SEAL) seal: ReasoningSeal | null,
    @Inject(NATS_CONNECTION) nc: NatsConnection | null,
  ) {
    this.chat = chatCompletionsHandler(engines, { media });
    this.completion = completionsHandler(engines);
    this.response = responsesHandler(engines, {
      media,
      seal,
      ...(nc ? { search: hostedSearch(nc) } : {}),
    });
    this.count = countTokensHandler(engines);
  }

  @MessagePattern(Subjects.chatCountTokens)
  countTokens(
    @Payload() req: ServiceRequest<ChatCompletionRequest>,
    @Ctx() ctx: HandlerContext,
  ): Promise<EndFrame> {
    return this.count(req, ctx);
  }

  @MessagePattern(Subjects.chatCompletions)
  chatCompletions(
    @Payload() req: ServiceRequest<ChatServiceBody>,
    @Ctx() ctx: HandlerContext,
  ): Promise<EndFrame> {
    return this.chat(req, ctx);
  }

  @MessagePattern(Subjects.completions)
  completions(
    @Payload() req: ServiceRequest<CompletionRequest>,
    @Ctx() ctx: HandlerContext,
  ): Promise<EndFrame> {
    return this.completion(req, ctx);
  }

  @MessagePattern(Subjects.responses)
  responses(@Payload() req: ServiceRequest<ResponseRequest>, @Ctx() ctx: HandlerContext): Promise<EndFrame> {
    return this.response(req, ctx);
  }
}

/** Longer than the gateway's own bound on one search (SEARCH_DEADLINE_MS, 60 s). */
const HOSTED_SEARCH_TIMEOUT_MS = 65_000;

/**
 * A hosted web search (the Responses `web_search` tool) asked of the gateway that admitted the request,
 * on its envelope's `search` subject: the gateway admits, runs and meters it like POST /v1/search.
 */
function hostedSearch(nc: NatsConnection) {
  return async (subject: string, ask: HostedSearchAsk, signal: AbortSignal): Promise<SearchResult[]> => {
    signal.throwIfAborted();
    let raw: string;
    try {
      const msg = await Promise.race([
        nc.request(subject, JSON.stringify(ask), { timeout: HOSTED_SEARCH_TIMEOUT_MS }),
        new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        ),
      ]);
      raw = msg.string();
    } catch (e) {
      if (signal.aborted) throw e;
      throw new ApiError(503, 'Web search is unavailable right now (the gateway did not answer); retry.', {
        type: 'server_error',
        code: 'service_unavailable',
      });
    }
    const answer = JSON.parse(raw) as HostedSearchAnswer;
    if ('error' in answer) throw ApiError.fromWire(answer.error);
    return answer.results;
  };
}

@Module({})
export class ChatServiceModule {
  /**
   * @param env the validated environment
   * @param rawEnv the process environment (upstream engines read the key named by `api_key_env`)
   * @param engines engines to use instead of the built-in ones (tests register fakes)
   */
  static forRoot(env: ChatServiceEnv, rawEnv: NodeJS.ProcessEnv, engines?: EngineRegistry): DynamicModule {
    return {
      module: ChatServiceModule,
      controllers: [ChatController],
      providers: [
        { provide: MEDIA_OPTIONS, useValue: mediaOptions(env) },
        { provide: REASONING_SEAL, useValue: reasoningSeal(env) },
        {
          provide: EngineRegistry,
          inject: [SERVICE_LOG],
          useFactory: (log: Logger) => engines ?? new EngineRegistry(log, builtinEngineFactories, rawEnv),
        },
      ],
    };
  }
}
