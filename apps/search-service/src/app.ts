import { resolve } from 'node:path';
import { QueueGroups, Subjects } from '@infer/contracts';
import { createPrisma } from '@infer/persistence';
import { SearchDocumentsRepository, type SeedResult, seedProjectDocs } from '@infer/search-index';
import { createLogger, type RunningService, startService } from '@infer/service-kit';
import { Redis } from 'ioredis';
import { loadSearchConfig, type SearchConfig } from './config.js';
import type { SearchEngine } from './engines/engine.js';
import { startHybrid } from './engines/hybrid-wiring.js';
import { createEngine } from './engines/registry.js';
import { SearchCache } from './search/cache.js';
import { searchHandler } from './search/search.handler.js';

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
  /** For tests only: prefix of the embedding service's subject (as the gateway's MODEL_SUBJECT_PREFIX). */
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
  const redis = new Redis(config.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  const closeStores = async () => {
    redis.disconnect();
    await prisma.$disconnect();
  };
  let seeded: SeedResult | null = null;
  let engine: SearchEngine;
  try {
    await redis.connect();
    engine = opts.engine ?? createEngine(config, { repo });
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
  const handler = searchHandler({
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
  });
  let svc: RunningService;
  try {
    svc = await startService({
      name: 'search-service',
      queue: QueueGroups.search,
      handlers: { [subjects.search]: handler },
      env: opts.env,
      installSignalHandlers: false,
    });
  } catch (e) {
    await closeStores();
    throw e;
  }
  const backfill = startHybrid(engine, svc.nc, repo, prisma, config, log, opts.embeddingSubjectPrefix);
  log.info({ engine: engine.name, cacheTtlS: config.SEARCH_CACHE_TTL_S }, 'search engine ready');
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await backfill?.stop();
      await svc.stop();
      await engine.close?.();
      await closeStores();
    })();
    return stopping;
  };
  if (opts.installSignalHandlers) {
    for (const sig of ['SIGTERM', 'SIGINT'] as const)
      process.once(sig, () => void stop().then(() => process.exit(0)));
  }
  return { ...svc, config, engine, repo, subjects, seeded, stop };
}
