import { QueueGroups, Subjects } from '@infer/contracts';
import { parseConfig, type RunningService, startMicroservice } from '@infer/runtime';
import { ChatServiceModule } from './chat.module.js';
import { ChatServiceEnvSchema } from './config.js';
import { EngineRegistry } from './engines/registry.js';
import { sharePoolMoves } from './pool-moves.js';

export interface ChatServiceOptions {
  /** Environment to validate (ChatServiceEnvSchema: NATS_URL, LOG_LEVEL, MEDIA_*, OPS_*); default process.env. */
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

/**
 * Starts the chat service: a NestJS microservice (ChatServiceModule) on the NATS RPC transport, in the
 * chat-service queue group. Requests enter ChatController (chat.module.ts).
 */
export async function startChatService(opts: ChatServiceOptions = {}): Promise<ChatService> {
  const env = parseConfig('chat-service', ChatServiceEnvSchema, opts.env);
  const prefix = opts.subjectPrefix ?? '';
  const svc = await startMicroservice({
    name: 'chat-service',
    queue: QueueGroups.chat,
    module: ChatServiceModule.forRoot(env, opts.env ?? process.env, opts.engines),
    env: opts.env,
    subjectPrefix: prefix,
    installSignalHandlers: opts.installSignalHandlers ?? false,
  });
  const stopMoves = sharePoolMoves(svc.nc, prefix);
  return {
    ...svc,
    stop: (graceMs?: number) => {
      stopMoves();
      return svc.stop(graceMs);
    },
    engines: svc.app.get(EngineRegistry),
    subjects: {
      chatCompletions: `${prefix}${Subjects.chatCompletions}`,
      completions: `${prefix}${Subjects.completions}`,
      responses: `${prefix}${Subjects.responses}`,
    },
  };
}
