import type { SearchDocumentsRepository } from '@infer/search-index';
import { EngineError, type EngineQuery, type EngineResult, type SearchEngine } from './engine.js';

/**
 * The local index: PostgreSQL full-text search over the documents the operator ingested (admin CLI
 * `search ingest`, admin API `POST /admin/search/documents`), seeded with the project's documentation.
 * The query uses websearch_to_tsquery syntax (words, "a phrase", -excluded, or); results are ranked by
 * ts_rank_cd with ts_headline snippets. Freshness filters on the document's `fetchedAt`. The index
 * holds each document's text, so `fetch_content` takes it from there instead of fetching the URL.
 */
export class LocalIndexEngine implements SearchEngine {
  readonly name = 'local';

  constructor(private readonly repo: SearchDocumentsRepository) {}

  async search(q: EngineQuery, _signal: AbortSignal): Promise<EngineResult[]> {
    let hits: Awaited<ReturnType<SearchDocumentsRepository['search']>>;
    try {
      hits = await this.repo.search({
        query: q.query,
        limit: q.count,
        ...(q.window ? { since: q.window.since } : {}),
        ...(q.window?.until ? { until: q.window.until } : {}),
        withBody: q.withContent,
      });
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
      ...(h.body !== undefined ? { content: h.body } : {}),
    }));
  }
}
