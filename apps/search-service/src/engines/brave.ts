import { EngineError, type EngineQuery, type EngineResult, type SearchEngine } from './engine.js';
import { getJson } from './http.js';
import { hostOf, isHttpUrl, plainText } from './text.js';

export interface BraveSettings {
  apiKey: string;
  /** `https://api.search.brave.com` (tests: a local server). */
  baseUrl: string;
  timeoutMs: number;
  country?: string;
  safesearch?: 'off' | 'moderate' | 'strict';
}

interface BraveAnswer {
  web?: {
    results?: Array<{
      title?: unknown;
      url?: unknown;
      description?: unknown;
      page_age?: unknown;
      profile?: { name?: unknown };
      meta_url?: { hostname?: unknown };
    }>;
  };
}

/**
 * Brave Search API, web search: `GET /res/v1/web/search` with the subscription token in
 * `X-Subscription-Token`. Its `count` goes up to 20 and its `freshness` takes exactly the spec's values
 * (pd, pw, pm, py, YYYY-MM-DDtoYYYY-MM-DD), so both pass through. A response without `web` (no web
 * results for the query) is an empty answer; 401/403 (bad token), 429 (Brave's own rate limit) and
 * 5xx are failures (503 search_unavailable to the client, the reason in the log).
 */
export class BraveEngine implements SearchEngine {
  readonly name = 'brave';

  constructor(private readonly settings: BraveSettings) {}

  async search(q: EngineQuery, signal: AbortSignal): Promise<EngineResult[]> {
    const url = new URL(`${this.settings.baseUrl}/res/v1/web/search`);
    url.searchParams.set('q', q.query);
    url.searchParams.set('count', String(Math.min(20, q.count)));
    url.searchParams.set('text_decorations', 'false');
    if (q.freshness) url.searchParams.set('freshness', q.freshness);
    if (this.settings.country) url.searchParams.set('country', this.settings.country);
    if (this.settings.safesearch) url.searchParams.set('safesearch', this.settings.safesearch);
    const answer = (await getJson(this.name, url, {
      headers: { 'x-subscription-token': this.settings.apiKey },
      signal,
      timeoutMs: this.settings.timeoutMs,
    })) as BraveAnswer;
    if (!answer || typeof answer !== 'object') throw new EngineError(this.name, 'answer is not an object');
    const results = answer.web?.results ?? [];
    if (!Array.isArray(results)) throw new EngineError(this.name, 'web.results is not an array');
    const out: EngineResult[] = [];
    const seen = new Set<string>();
    for (const r of results) {
      if (!isHttpUrl(r.url) || seen.has(r.url)) continue;
      seen.add(r.url);
      const host = typeof r.meta_url?.hostname === 'string' ? r.meta_url.hostname.replace(/^www\./, '') : '';
      const published = typeof r.page_age === 'string' ? new Date(r.page_age) : undefined;
      out.push({
        title: plainText(r.title) || r.url,
        url: r.url,
        snippet: plainText(r.description),
        source: host || hostOf(r.url),
        ...(published && !Number.isNaN(published.getTime()) ? { publishedAt: published } : {}),
      });
      if (out.length >= q.count) break;
    }
    return out;
  }
}
