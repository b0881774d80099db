import { type ChatCompletionRequest, ZERO_USAGE } from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import type { EngineRegistry } from '../engines/registry.js';
import { countPromptTokens } from '../tokens.js';
import { checkChatRequest, toEngineInput } from './engine-input.js';

/**
 * `infer.chat.count-tokens`: the prompt tokens of a chat body (Anthropic's `count_tokens`), counted the
 * way the model's engine counts them when it runs: an engine that tokenizes itself (embedded llama.cpp)
 * measures the prompt with its own tokenizer and chat template; the others get the shared approximation
 * (src/tokens.ts) that the simulator also reports as usage. Image and audio parts count their fixed
 * amount (their URLs are not fetched for a count). Nothing is generated: the usage is zero.
 */
export function countTokensHandler(engines: EngineRegistry): RpcHandler<ChatCompletionRequest> {
  return async (req, ctx) => {
    checkChatRequest(req.body, req.model);
    const engine = engines.get(req.model);
    const input = toEngineInput(req.body, req.model);
    const textOnly = input.messages.every((m) => typeof m.content === 'string' || m.content === null);
    const tokens =
      engine.measure && textOnly
        ? (await engine.measure(input, ctx.signal)).prompt_tokens
        : countPromptTokens(input.messages, input.tools);
    return { data: { input_tokens: tokens }, usage: ZERO_USAGE };
  };
}
