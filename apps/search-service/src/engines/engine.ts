/**
 * The ONE search engine interface (docs/architecture.md, rule 3: engines are adapters).
 *
 * An engine answers one query with at most `count` results, best first. It knows nothing about NATS,
 * the cache or `fetch_content`: the search handler does those. An engine that cannot answer (upstream
 * down, bad credentials, timeout, unreadable answer) throws; the handler turns that into 503
 * `search_unavailable`. Zero results is an answer, not a failure.
 *
 * Implementations: `searxng.ts` (a SearXNG instance's JSON API), `brave.ts` (Brave Search API),
 * `local.ts` (PostgreSQL full-text search over the documents the operator ingested).
 */
export interface EngineQuery {
  query: string;
  /** 1..20, already clamped. */
  count: number;
  /** The request's freshness as given (`pd`, `pw`, `pm`, `py` or `YYYY-MM-DDtoYYYY-MM-DD`). */
  freshness?: string;
  /** The same freshness as a time window, computed once by the handler with the service clock. */
  window?: TimeWindow;
  /** The service clock's "now" (what relative windows were computed from). */
  now: Date;
  /** Engines that hold the text of their documents (the local index) return it as `content`. */
  withContent: boolean;
}

/** [since, until) in absolute time; `until` absent means "up to now". */
export interface TimeWindow {
  since: Date;
  until?: Date;
}

export interface EngineResult {
  title: string;
  url: string;
  snippet: string;
  source: string;
  /** Publication date when the engine knows it (used to apply date ranges engines cannot filter on). */
  publishedAt?: Date;
  /** The document's own text, from engines that store it (local index). */
  content?: string;
}

export interface SearchEngine {
  /** `local`, `searxng`, `brave` (logs, cache key). */
  readonly name: string;
  search(q: EngineQuery, signal: AbortSignal): Promise<EngineResult[]>;
  close?(): Promise<void>;
}

/** An engine failure: the message is for logs (never sent to the client). */
export class EngineError extends Error {
  constructor(
    readonly engine: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${engine}: ${message}`, options);
    this.name = 'EngineError';
  }
}
