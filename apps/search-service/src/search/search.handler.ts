import {
  ApiError,
  ErrorCode,
  ErrorType,
  parseOrThrow,
  type SearchRequest,
  SearchRequestSchema,
  type SearchResponse,
  type SearchResult,
  ZERO_USAGE,
} from '@infer/contracts';
import type { RpcHandler } from '@infer/rpc';
import type { EngineResult, SearchEngine } from '../engines/engine.js';
import type { SearchCache } from './cache.js';
import { addContent, type ContentOptions, toResult } from './content.js';
import { freshnessWindow } from './freshness.js';

export interface SearchHandlerDeps {
  engine: SearchEngine;
  cache: SearchCache;
  content: ContentOptions;
  /** Longest wait for the engine (ms). */
  engineTimeoutMs: number;
  clock: () => number;
}

export function searchUnavailable(): ApiError {
  return new ApiError(503, 'Web search is temporarily unavailable; retry later.', {
    type: ErrorType.server,
    code: ErrorCode.searchUnavailable,
  });
}

/**
 * One search: cache lookup -> engine (with its time limit) -> first `count` results, one per URL ->
 * optional page content -> cache store. An engine failure is 503 search_unavailable (the cause goes to
 * the log); a content failure only leaves that result without `content`.
 */
export function searchHandler(deps: SearchHandlerDeps): RpcHandler<unknown> {
  return async (req, ctx) => {
    // The gateway validated the body; parsing again fills defaults and guards against other callers.
    const body: SearchRequest = parseOrThrow(SearchRequestSchema, req.body);
    const key = deps.cache.key(deps.engine.name, body);
    const hit = await deps.cache.get(key);
    if (hit) {
      ctx.log.info({ engine: deps.engine.name, results: hit.length, cached: true }, 'search');
      return { data: { results: hit, cached: true } satisfies SearchResponse, usage: ZERO_USAGE };
    }
    const now = new Date(deps.clock());
    const window = freshnessWindow(body.freshness, now);
    const started = performance.now();
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(deps.engineTimeoutMs)]);
    let found: EngineResult[];
    try {
      found = await deps.engine.search(
        {
          query: body.query,
          count: body.count,
          ...(body.freshness ? { freshness: body.freshness } : {}),
          ...(window ? { window } : {}),
          now,
          withContent: body.fetch_content,
        },
        signal,
      );
    } catch (err) {
      if (ctx.signal.aborted) throw err; // the client went away or the deadline passed: not an outage
      ctx.log.warn({ err, engine: deps.engine.name }, 'search engine failed');
      throw searchUnavailable();
    }
    const seen = new Set<string>();
    const top = found.filter((r) => !seen.has(r.url) && seen.add(r.url)).slice(0, body.count);
    const engineMs = Math.round(performance.now() - started);
    const results: SearchResult[] = body.fetch_content
      ? await addContent(top, deps.content, ctx.signal, ctx.log)
      : top.map(toResult);
    await deps.cache.set(key, results);
    ctx.log.info(
      {
        engine: deps.engine.name,
        results: results.length,
        cached: false,
        engineMs,
        totalMs: Math.round(performance.now() - started),
        withContent: body.fetch_content ? results.filter((r) => r.content !== undefined).length : undefined,
      },
      'search',
    );
    return { data: { results, cached: false } satisfies SearchResponse, usage: ZERO_USAGE };
  };
}
