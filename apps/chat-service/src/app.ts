import { QueueGroups, Subjects } from '@infer/contracts';
import { createLogger, parseConfig, type RunningService, startService } from '@infer/service-kit';
import { chatCompletionsHandler } from './chat/chat.handler.js';
import { completionsHandler } from './completions/completions.handler.js';
import { ChatServiceEnvSchema, mediaOptions } from './config.js';
import { builtinEngineFactories } from './engines/builtin.js';
import { EngineRegistry } from './engines/registry.js';
import { responsesHandler } from './responses/responses.handler.js';

export interface ChatServiceOptions {
  /** Environment to validate (ChatServiceEnvSchema: NATS_URL, LOG_LEVEL, MEDIA_*); default process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * For tests only: prepended to every subject the service answers (e.g. `test.<uuid>.`), so that
   * concurrent test files do not answer each other's requests. Production leaves it ''.
   */
  subjectPrefix?: string;
  /** Stop on SIGTERM/SIGINT (main.ts: true; in-process tests: false, the default). */
  installSignalHandlers?: boolean;
  /** Engines to use instead of the built-in ones (tests can register fakes). */
  engines?: EngineRegistry;
}

export interface ChatService extends RunningService {
  engines: EngineRegistry;
  /** The subjects the service answers, by name (with the prefix applied). */
  subjects: { chatCompletions: string; completions: string; responses: string };
}

/** Starts the chat service: validated env, NATS, the chat-service queue group, its handlers. */
export async function startChatService(opts: ChatServiceOptions = {}): Promise<ChatService> {
  // Validated here too (startService does it again) so that a bad env fails before anything starts.
  const env = parseConfig('chat-service', ChatServiceEnvSchema, opts.env);
  const prefix = opts.subjectPrefix ?? '';
  const subjects = {
    chatCompletions: `${prefix}${Subjects.chatCompletions}`,
    completions: `${prefix}${Subjects.completions}`,
    responses: `${prefix}${Subjects.responses}`,
  };
  const engines =
    opts.engines ??
    new EngineRegistry(
      createLogger('chat-service', env.LOG_LEVEL),
      builtinEngineFactories,
      opts.env ?? process.env,
    );
  const media = mediaOptions(env);
  const svc = await startService({
    name: 'chat-service',
    queue: QueueGroups.chat,
    handlers: {
      [subjects.chatCompletions]: chatCompletionsHandler(engines, { media }),
      [subjects.completions]: completionsHandler(engines),
      [subjects.responses]: responsesHandler(engines, { media }),
    },
    env: opts.env,
    installSignalHandlers: opts.installSignalHandlers ?? false,
  });
  return {
    ...svc,
    engines,
    subjects,
    stop: async () => {
      await svc.stop();
      await engines.close();
    },
  };
}
