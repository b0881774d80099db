import { resolve } from 'node:path';
import { QueueGroups, Subjects } from '@infer/contracts';
import { createPrisma } from '@infer/persistence';
import { createRedisClient, watchRedis } from '@infer/rpc';
import { type RunningService, startMicroservice } from '@infer/runtime';
import { SearchDocumentsRepository, type SeedResult, seedProjectDocs } from '@infer/search-index';
import { createLogger, startTelemetry, traceEngine } from '@infer/telemetry';
import { loadSearchConfig, type SearchConfig } from './config.js';
import type { SearchEngine } from './engines/engine.js';
import { startHybrid } from './engines/hybrid-wiring.js';
import { createEngine } from './engines/registry.js';
import { SearchCache } from './search/cache.js';
import type { SearchHandlerDeps } from './search/search.handler.js';
import { SearchServiceModule } from './search.module.js';

export interface SearchServiceOptions {
  /** Environment to validate (SearchEnvSchema, src/config.ts); default process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * For tests only: prepended to the subject the service answers (e.g. `test.<uuid>.`), so that
   * concurrent test runs do not answer each other's requests. The gateway's SEARCH_SUBJECT_PREFIX must
   * match. Production leaves it ''.
   */
  subjectPrefix?: string;
  /** Stop on SIGTERM/SIGINT (main.ts: true; in-process tests: false, the default). */
  installSignalHandlers?: boolean;
  /** The service clock (ms since epoch) for cache expiry and relative freshness; default Date.now. */
  clock?: () => number;
  /** An engine to use instead of the configured one (tests). */
  engine?: SearchEngine;
  /**
   * For tests only: prefix of the embedding service's subject (as the gateway's MODEL_SUBJECT_PREFIX);
   * default `subjectPrefix`.
   */
  embeddingSubjectPrefix?: string;
}

export interface SearchService extends RunningService {
  config: SearchConfig;
  engine: SearchEngine;
  repo: SearchDocumentsRepository;
  subjects: { search: string };
  /** What seeding the empty local index at start did (null: not seeded). */
  seeded: SeedResult | null;
}

/**
 * Starts the search service: validated env, the local index (PostgreSQL) and cache (Redis), the
 * configured engine, NATS in the search-service queue group. With the local engine and an empty index,
 * the project's documentation is loaded first so that the first search finds something.
 */
export async function startSearchService(opts: SearchServiceOptions = {}): Promise<SearchService> {
  const config = loadSearchConfig(opts.env);
  const log = createLogger('search-service', config.LOG_LEVEL);
  const clock = opts.clock ?? Date.now;
  const prisma = createPrisma(config.DATABASE_URL, { poolSize: 5 });
  const repo = new SearchDocumentsRepository(prisma);
  const redis = watchRedis(
    createRedisClient(config.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 }),
    log,
    'search-service',
  );
  const closeStores = async () => {
    redis.disconnect();
    await prisma.$disconnect();
  };
  let seeded: SeedResult | null = null;
  let engine: SearchEngine;
  try {
    await redis.connect();
    // Tracing (when OTEL_* asks for it) starts before the engine is built, so that its calls get spans.
    startTelemetry('search-service', opts.env ?? process.env);
    engine = opts.engine ?? createEngine(config, { repo });
    engine = traceEngine(engine, { type: engine.name, model: engine.name }, { search: 'search' });
    if (engine.name === 'local' && config.SEARCH_SEED_ON_START && (await repo.count()) === 0) {
      const root = resolve(config.SEARCH_DOCS_DIR ?? process.cwd());
      seeded = await seedProjectDocs(repo, root);
      log.info({ root, files: seeded.files, documents: seeded.documents }, 'seeded the empty local index');
      if (!seeded.documents)
        log.warn({ root }, 'no project documentation found to seed: set SEARCH_DOCS_DIR');
    }
  } catch (e) {
    await closeStores();
    throw e;
  }
  const subjects = { search: `${opts.subjectPrefix ?? ''}${Subjects.search}` };
  const cache = new SearchCache(
    redis,
    { prefix: config.SEARCH_CACHE_PREFIX, ttlMs: config.SEARCH_CACHE_TTL_S * 1000, clock },
    log,
  );
  const deps: SearchHandlerDeps = {
    engine,
    cache,
    clock,
    engineTimeoutMs: config.SEARCH_TIMEOUT_MS,
    content: {
      timeoutMs: config.FETCH_TIMEOUT_MS,
      maxBytes: config.FETCH_MAX_BYTES,
      maxRedirects: config.FETCH_MAX_REDIRECTS,
      concurrency: config.FETCH_CONCURRENCY,
      maxChars: config.FETCH_CONTENT_MAX_CHARS,
      allowHosts: config.FETCH_ALLOW_HOSTS,
      totalTimeoutMs: config.FETCH_TOTAL_TIMEOUT_MS,
    },
  };
  // Closed by the Nest app after the transport drained: the vector backfill, the engine, the stores.
  let backfill: ReturnType<typeof startHybrid> | undefined;
  const closeAll = async () => {
    await backfill?.stop();
    await engine.close?.();
    await closeStores();
  };
  let svc: RunningService;
  try {
    svc = await startMicroservice({
      name: 'search-service',
      queue: QueueGroups.search,
      module: SearchServiceModule.forRoot(deps, closeAll),
      env: opts.env,
      log,
      subjectPrefix: opts.subjectPrefix ?? '',
      installSignalHandlers: opts.installSignalHandlers ?? false,
      checks: () => [{ name: 'redis', check: () => redis.status === 'ready' }],
    });
  } catch (e) {
    await closeAll();
    throw e;
  }
  // The embedding service is asked on the same subject prefix as the one this service answers on, unless
  // told otherwise: a test stack never reaches the embedding service of another stack on the same NATS.
  backfill = startHybrid(
    engine,
    svc.nc,
    repo,
    prisma,
    config,
    log,
    opts.embeddingSubjectPrefix ?? opts.subjectPrefix,
  );
  log.info({ engine: engine.name, cacheTtlS: config.SEARCH_CACHE_TTL_S }, 'search engine ready');
  return { ...svc, config, engine, repo, subjects, seeded };
}
