/** What the chat-service offers other projects (bench/, test/). Imported as `@infer/chat-service/public`. */
export { startChatService } from './app.js';
export type { EngineInput, EngineMessage } from './engines/engine.js';
export { OpenAIUpstreamEngine } from './engines/openai-upstream.js';
