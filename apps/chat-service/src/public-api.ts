/** What the chat-service offers other projects (bench/, test/). Imported as `@infer/chat-service/public`. */
export { startChatService } from './app.js';
