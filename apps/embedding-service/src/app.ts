import { QueueGroups, Subjects } from '@infer/contracts';
import {
  createLogger,
  parseConfig,
  type RunningService,
  ServiceEnvSchema,
  startService,
} from '@infer/service-kit';
import { BatcherPool, embeddingsHandler } from './embeddings/embeddings.handler.js';
import { builtinEmbeddingFactories, builtinRerankFactories } from './engines/builtin.js';
import type { EmbeddingEngine, RerankEngine } from './engines/engine.js';
import { EngineRegistry } from './engines/registry.js';
import { rerankHandler } from './rerank/rerank.handler.js';

export interface EmbeddingServiceOptions {
  /** Environment to validate (ServiceEnvSchema: NATS_URL, LOG_LEVEL); default process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * For tests only: prepended to every subject the service answers (e.g. `test.<uuid>.`), so that
   * concurrent test files do not answer each other's requests. Production leaves it ''.
   */
  subjectPrefix?: string;
  /** Stop on SIGTERM/SIGINT (main.ts: true; in-process tests: false, the default). */
  installSignalHandlers?: boolean;
  /** Engines to use instead of the built-in ones (tests can register their own). */
  embedders?: EngineRegistry<EmbeddingEngine>;
  rankers?: EngineRegistry<RerankEngine>;
}

export interface EmbeddingService extends RunningService {
  embedders: EngineRegistry<EmbeddingEngine>;
  rankers: EngineRegistry<RerankEngine>;
  /** The subjects the service answers, by name (with the prefix applied). */
  subjects: { embeddings: string; rerank: string };
}

/**
 * Starts the embedding service: validated env, NATS, the embedding-service queue group, the embeddings
 * and rerank handlers, one engine registry per capability.
 */
export async function startEmbeddingService(opts: EmbeddingServiceOptions = {}): Promise<EmbeddingService> {
  // Validated here too (startService does it again) so that a bad env fails before anything starts.
  const env = parseConfig('embedding-service', ServiceEnvSchema, opts.env);
  const prefix = opts.subjectPrefix ?? '';
  const subjects = { embeddings: `${prefix}${Subjects.embeddings}`, rerank: `${prefix}${Subjects.rerank}` };
  const log = createLogger('embedding-service', env.LOG_LEVEL);
  const embedders = opts.embedders ?? new EngineRegistry('embeddings', log, builtinEmbeddingFactories);
  const rankers = opts.rankers ?? new EngineRegistry('rerank', log, builtinRerankFactories);
  const pool = new BatcherPool();
  const svc = await startService({
    name: 'embedding-service',
    queue: QueueGroups.embedding,
    handlers: {
      [subjects.embeddings]: embeddingsHandler(embedders, pool),
      [subjects.rerank]: rerankHandler(rankers),
    },
    env: opts.env,
    installSignalHandlers: opts.installSignalHandlers ?? false,
  });
  return {
    ...svc,
    embedders,
    rankers,
    subjects,
    stop: async () => {
      await svc.stop();
      await Promise.all([embedders.close(), rankers.close()]);
    },
  };
}
