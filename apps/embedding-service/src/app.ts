import { QueueGroups, Subjects } from '@infer/contracts';
import {
  type DefaultModels,
  loadDefaultModels,
  parseConfig,
  type RunningService,
  SERVICE_LOG,
  ServiceEnvSchema,
  startMicroservice,
} from '@infer/runtime';
import { EMBEDDERS, EmbeddingServiceModule, RANKERS } from './embedding.module.js';
import type { EmbeddingEngine, RerankEngine } from './engines/engine.js';
import type { EngineRegistry } from './engines/registry.js';

export interface EmbeddingServiceOptions {
  /** Environment to validate (ServiceEnvSchema: NATS_URL, LOG_LEVEL, OPS_*); default process.env. */
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
  /**
   * Load the catalog file's embedding and rerank models at start and report ready only once they have
   * loaded (main.ts: true; CATALOG_FILE, else config/models.yaml). Off by default for in-process tests.
   */
  loadDefaultModels?: boolean;
}

export interface EmbeddingService extends RunningService {
  embedders: EngineRegistry<EmbeddingEngine>;
  rankers: EngineRegistry<RerankEngine>;
  /** The subjects the service answers, by name (with the prefix applied). */
  subjects: { embeddings: string; rerank: string };
}

/**
 * Starts the embedding service: a NestJS microservice (EmbeddingServiceModule) on the NATS RPC
 * transport, in the embedding-service queue group. Requests enter EmbeddingController.
 */
export async function startEmbeddingService(opts: EmbeddingServiceOptions = {}): Promise<EmbeddingService> {
  // Validated before anything starts, so that a bad env fails first.
  parseConfig('embedding-service', ServiceEnvSchema, opts.env);
  const prefix = opts.subjectPrefix ?? '';
  let defaults: DefaultModels | undefined;
  const svc = await startMicroservice({
    name: 'embedding-service',
    queue: QueueGroups.embedding,
    module: EmbeddingServiceModule.forRoot({ embedders: opts.embedders, rankers: opts.rankers }),
    env: opts.env,
    subjectPrefix: prefix,
    installSignalHandlers: opts.installSignalHandlers ?? false,
    checks: (app) => {
      if (!opts.loadDefaultModels) return [];
      const embedders = app.get<EngineRegistry<EmbeddingEngine>>(EMBEDDERS);
      const rankers = app.get<EngineRegistry<RerankEngine>>(RANKERS);
      defaults = loadDefaultModels({
        kinds: ['embedding', 'rerank'],
        load: (m) => (m.kind === 'rerank' ? rankers.get(m).ready() : embedders.get(m).ready()),
        log: app.get(SERVICE_LOG),
        env: opts.env,
      });
      return [defaults.check];
    },
  });
  return {
    ...svc,
    stop: (graceMs?: number) => {
      defaults?.stop();
      return svc.stop(graceMs);
    },
    embedders: svc.app.get(EMBEDDERS),
    rankers: svc.app.get(RANKERS),
    subjects: { embeddings: `${prefix}${Subjects.embeddings}`, rerank: `${prefix}${Subjects.rerank}` },
  };
}
