import type { Db } from '@infer/persistence';
import { CatalogRepository } from '@infer/persistence';
import type { SearchDocumentsRepository } from '@infer/search-index';
import type { Logger } from '@infer/telemetry';
import type { NatsConnection } from '@nats-io/transport-node';
import type { SearchConfig } from '../config.js';
import type { SearchEngine } from './engine.js';
import { EmbeddingBackfill, EmbeddingServiceClient } from './hybrid.js';
import { LocalIndexEngine } from './local.js';

/**
 * Turns on the hybrid ranking of the local engine (SEARCH_HYBRID) and the background embedding of new
 * documents; returns the backfill to stop with the service (null when off or another engine).
 */
export function startHybrid(
  engine: SearchEngine,
  nc: NatsConnection,
  repo: SearchDocumentsRepository,
  db: Db,
  config: SearchConfig,
  log: Logger,
  subjectPrefix?: string,
): EmbeddingBackfill | null {
  if (!(engine instanceof LocalIndexEngine) || !config.SEARCH_HYBRID) return null;
  const catalog = new CatalogRepository(db);
  const embedder = new EmbeddingServiceClient(
    nc,
    config.SEARCH_EMBED_MODEL,
    async () => (await catalog.listEnabled()).find((m) => m.id === config.SEARCH_EMBED_MODEL) ?? null,
    { ...(subjectPrefix ? { subjectPrefix } : {}), timeoutMs: config.SEARCH_TIMEOUT_MS },
  );
  engine.useEmbeddings(embedder, log);
  const backfill = new EmbeddingBackfill(repo, embedder, log, {
    intervalMs: config.SEARCH_EMBED_INTERVAL_MS,
  });
  backfill.start();
  return backfill;
}
