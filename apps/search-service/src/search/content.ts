import type { SearchResult } from '@infer/contracts';
import { type SafeFetchOptions, safeFetch } from '@infer/runtime';
import { decodeBody, extractReadableText, tidyText } from '@infer/search-index';
import type { Logger } from '@infer/telemetry';
import type { EngineResult } from '../engines/engine.js';

export interface ContentOptions {
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  concurrency: number;
  maxChars: number;
  /** Hosts exempt from the SSRF address check (operator configuration, tests). */
  allowHosts: string[];
  /** Whole fetch_content phase: pages not done by then get no content. */
  totalTimeoutMs: number;
}

/** Media types whose readable text we extract. */
const READABLE_TYPES = ['text/html', 'application/xhtml+xml', 'text/plain'];

/** Cuts text to `max` characters at a paragraph, line or word boundary. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  for (const sep of ['\n\n', '\n', ' ']) {
    const at = cut.lastIndexOf(sep);
    if (at > max * 0.6) return `${cut.slice(0, at).trimEnd()} …`;
  }
  return `${cut} …`;
}

/** Fetches one result page through the SSRF guard and returns its readable main text. */
export async function fetchReadableText(
  url: string,
  opts: ContentOptions,
  signal: AbortSignal,
): Promise<string> {
  const fetchOpts: SafeFetchOptions = {
    maxBytes: opts.maxBytes,
    timeoutMs: opts.timeoutMs,
    maxRedirects: opts.maxRedirects,
    allowedContentTypes: READABLE_TYPES,
    signal,
    headers: { accept: 'text/html,application/xhtml+xml,text/plain;q=0.9' },
    ...(opts.allowHosts.length ? { allowHosts: opts.allowHosts } : {}),
  };
  const page = await safeFetch(url, fetchOpts);
  const text = decodeBody(page.body, page.contentType);
  if (page.contentType.startsWith('text/plain')) return tidyText(text);
  return (await extractReadableText(text, page.finalUrl)).text;
}

/**
 * Adds `content` to each result: the text the engine already holds (local index), else the readable
 * main text of the result's own URL, fetched through the SSRF guard (safeFetch: public addresses only,
 * size, time and redirect limits, HTML or text only). Only the URLs the search returned are fetched.
 * A page that cannot be fetched or read gets no `content`; the search itself never fails here.
 */
export async function addContent(
  results: EngineResult[],
  opts: ContentOptions,
  signal: AbortSignal,
  log: Logger,
): Promise<SearchResult[]> {
  const phase = AbortSignal.any([signal, AbortSignal.timeout(opts.totalTimeoutMs)]);
  const out: SearchResult[] = results.map(toResult);
  let next = 0;
  const worker = async () => {
    while (next < results.length) {
      const i = next++;
      const r = results[i]!;
      if (r.content !== undefined) {
        out[i]!.content = capText(r.content, opts.maxChars);
        continue;
      }
      if (phase.aborted) continue;
      const started = performance.now();
      try {
        const text = await fetchReadableText(r.url, opts, phase);
        out[i]!.content = capText(text, opts.maxChars);
        log.debug({ url: r.url, ms: Math.round(performance.now() - started), chars: text.length }, 'content');
      } catch (err) {
        const reason = (err as { reason?: string }).reason ?? (err as Error).name;
        log.info({ url: r.url, reason, ms: Math.round(performance.now() - started) }, 'content not fetched');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, results.length) }, worker));
  return out;
}

export function toResult(r: EngineResult): SearchResult {
  return { title: r.title, url: r.url, snippet: r.snippet, source: r.source };
}
