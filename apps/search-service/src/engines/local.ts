import type { SearchDocumentsRepository } from '@infer/search-index';
import { createLogger, type Logger } from '@infer/telemetry';
import { EngineError, type EngineQuery, type EngineResult, type SearchEngine } from './engine.js';
import { rankHybrid, type TextEmbedder } from './hybrid.js';

/**
 * The local index: PostgreSQL full-text search over the documents the operator ingested (admin CLI
 * `search ingest`, admin API `POST /admin/search/documents`), seeded with the project's documentation.
 * The query uses websearch_to_tsquery syntax (words, "a phrase", -excluded, or); results are ranked by
 * ts_rank_cd with ts_headline snippets. Freshness filters on the document's `fetchedAt`. The index
 * holds each document's text, so `fetch_content` takes it from there instead of fetching the URL.
 * With an embedder (`useEmbeddings`, SEARCH_HYBRID=1: the default), full-text search only recalls the
 * candidates and the hybrid of full-text rank and vector similarity orders them (hybrid.ts).
 */
export class LocalIndexEngine implements SearchEngine {
  readonly name = 'local';

  private embedder: { embedder: TextEmbedder; log: Logger } | null = null;

  constructor(private readonly repo: SearchDocumentsRepository) {}

  /** Ranks by the hybrid of full-text rank and vectors of this embedder from now on. */
  useEmbeddings(embedder: TextEmbedder, log: Logger = createLogger('search-hybrid', 'silent')): void {
    this.embedder = { embedder, log };
  }

  async search(q: EngineQuery, signal: AbortSignal): Promise<EngineResult[]> {
    let hits: Awaited<ReturnType<SearchDocumentsRepository['search']>> | null = null;
    const window = {
      ...(q.window ? { since: q.window.since } : {}),
      ...(q.window?.until ? { until: q.window.until } : {}),
    };
    try {
      if (this.embedder)
        hits = await rankHybrid(
          this.repo,
          this.embedder.embedder,
          { query: q.query, count: q.count, ...window },
          this.embedder.log,
          signal,
        );
      hits ??= await this.repo.search({ query: q.query, limit: q.count, ...window, withBody: q.withContent });
    } catch (e) {
      throw new EngineError(this.name, `index query failed (${(e as Error).message.split('\n').pop()})`, {
        cause: e,
      });
    }
    return hits.map((h) => ({
      title: h.title,
      url: h.url,
      snippet: h.snippet,
      source: h.source,
      publishedAt: h.fetchedAt,
      ...(h.body !== undefined && q.withContent ? { content: h.body } : {}),
    }));
  }
}
