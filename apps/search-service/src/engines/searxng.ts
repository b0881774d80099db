import {
  EngineError,
  type EngineQuery,
  type EngineResult,
  type SearchEngine,
  type TimeWindow,
} from './engine.js';
import { getJson } from './http.js';
import { hostOf, isHttpUrl, plainText } from './text.js';

export interface SearxngSettings {
  baseUrl: string;
  timeoutMs: number;
  /** Comma-separated engine list (`google,bing`), else the instance's defaults. */
  engines?: string;
  language?: string;
}

const RELATIVE: Record<string, 'day' | 'week' | 'month' | 'year'> = {
  pd: 'day',
  pw: 'week',
  pm: 'month',
  py: 'year',
};
const DAY = 86_400_000;
/** The widest span each SearXNG time_range covers, to pick one for a date range. */
const SPANS = [
  ['day', DAY],
  ['week', 7 * DAY],
  ['month', 31 * DAY],
  ['year', 366 * DAY],
] as const;

/** Pages read at most to fill `count` (SearXNG answers roughly 10 results per page). */
const MAX_PAGES = 3;

interface SearxngAnswer {
  results?: Array<{
    url?: unknown;
    title?: unknown;
    content?: unknown;
    publishedDate?: unknown;
    pubdate?: unknown;
  }>;
}

/**
 * SearXNG's JSON API: `GET /search?q=...&format=json&pageno=N[&time_range=day|week|month|year]`. The
 * instance must allow the json format (settings.yml `search.formats: [html, json]`; otherwise it
 * answers 403, which becomes 503 search_unavailable here with the reason in the log).
 *
 * Freshness: pd/pw/pm/py map to time_range day/week/month/year. SearXNG has no date range, so a range
 * uses the smallest time_range that reaches back to its start (none beyond a year), and results that
 * carry a publication date outside the range are dropped (undated results are kept).
 */
export class SearxngEngine implements SearchEngine {
  readonly name = 'searxng';

  constructor(private readonly settings: SearxngSettings) {}

  async search(q: EngineQuery, signal: AbortSignal): Promise<EngineResult[]> {
    const timeRange = q.freshness ? (RELATIVE[q.freshness] ?? rangeTimeRange(q.window, q.now)) : undefined;
    const range = q.freshness && !RELATIVE[q.freshness] ? q.window : undefined;
    const out: EngineResult[] = [];
    const seen = new Set<string>();
    for (let page = 1; page <= MAX_PAGES && out.length < q.count; page++) {
      const url = new URL(`${this.settings.baseUrl}/search`);
      url.searchParams.set('q', q.query);
      url.searchParams.set('format', 'json');
      url.searchParams.set('pageno', String(page));
      if (timeRange) url.searchParams.set('time_range', timeRange);
      if (this.settings.engines) url.searchParams.set('engines', this.settings.engines);
      if (this.settings.language) url.searchParams.set('language', this.settings.language);
      const answer = (await getJson(this.name, url, {
        signal,
        timeoutMs: this.settings.timeoutMs,
      })) as SearxngAnswer;
      if (!answer || typeof answer !== 'object' || !Array.isArray(answer.results)) {
        throw new EngineError(this.name, 'answer has no results array');
      }
      if (!answer.results.length) break;
      for (const r of answer.results) {
        if (!isHttpUrl(r.url) || seen.has(r.url)) continue;
        const published = parseDate(r.publishedDate ?? r.pubdate);
        if (range && published && !inWindow(published, range)) continue;
        seen.add(r.url);
        out.push({
          title: plainText(r.title) || r.url,
          url: r.url,
          snippet: plainText(r.content),
          source: hostOf(r.url),
          ...(published ? { publishedAt: published } : {}),
        });
        if (out.length >= q.count) break;
      }
    }
    return out;
  }
}

function rangeTimeRange(w: TimeWindow | undefined, now: Date): string | undefined {
  if (!w) return undefined;
  const back = now.getTime() - w.since.getTime();
  return SPANS.find(([, span]) => back <= span)?.[0];
}

function parseDate(v: unknown): Date | undefined {
  if (typeof v !== 'string' || !v) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

function inWindow(d: Date, w: TimeWindow): boolean {
  return d >= w.since && (!w.until || d < w.until);
}
