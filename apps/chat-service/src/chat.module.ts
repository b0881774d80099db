import {
  type ChatCompletionRequest,
  type ChatServiceBody,
  type CompletionRequest,
  type EndFrame,
  type ResponseRequest,
  type ServiceRequest,
  Subjects,
} from '@infer/contracts';
import { type HandlerContext, type RpcHandler } from '@infer/rpc';
import { SERVICE_LOG } from '@infer/runtime';
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
  ) {
    this.chat = chatCompletionsHandler(engines, { media });
    this.completion = completionsHandler(engines);
    this.response = responsesHandler(engines, { media, seal });
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
