import {
  ApiError,
  type EndFrame,
  type SearchRequest,
  type SearchResponse,
  SearchResponseSchema,
  Subjects,
} from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { Inject, Injectable } from '@nestjs/common';
import type { AuthedKey } from '../auth/key-cache.js';
import { GovernedCall } from '../call/governed-call.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER } from '../infra/tokens.js';
import { webSearchEntry } from './web-search-entry.js';

/**
 * Longest a search may take end to end (ms). The search-service bounds the engine (SEARCH_TIMEOUT_MS,
 * 10 s) and the page fetches of fetch_content (FETCH_TOTAL_TIMEOUT_MS, 20 s) well inside it.
 */
export const SEARCH_DEADLINE_MS = 60_000;

export interface SearchOutcome {
  response: SearchResponse;
  /** x-ratelimit-* headers of the search budget. */
  headers: Record<string, string>;
}

/**
 * One web search on behalf of a key, shared by POST /v1/search and the MCP web_search tool: admit it
 * against the search budget (20/min, 3 concurrent, 500/day; 429 with Retry-After), ask the
 * search-service over NATS, release the concurrency slot, record one usage event. Cached answers go
 * through the same path, so they count toward rate and quota like any other.
 */
@Injectable()
export class SearchGateway {
  /** The web-search entry with its price (WEB_SEARCH_PRICE), built once. */
  private readonly entry;

  constructor(
    @Inject(GovernedCall) private readonly call: GovernedCall,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    this.entry = webSearchEntry(config.WEB_SEARCH_PRICE);
  }

  get subject(): string {
    return `${this.config.SEARCH_SUBJECT_PREFIX}${Subjects.search}`;
  }

  /** `body` is already validated (SearchRequestSchema); `endpoint` names the route in usage events. */
  async search(
    auth: AuthedKey,
    body: SearchRequest,
    requestId: string,
    endpoint: string,
  ): Promise<SearchOutcome> {
    const call = await this.call.admitSearch({
      kind: 'search',
      requestId,
      caller: auth,
      endpoint,
      subject: this.subject,
      model: this.entry,
      body,
      stream: false,
      deadlineMs: SEARCH_DEADLINE_MS,
    });
    let status = 500;
    let failure: unknown;
    try {
      let end: EndFrame;
      try {
        end = await this.call.dispatch(call);
      } catch (e) {
        status = e instanceof ApiError ? e.status : 500;
        failure = e;
        throw e;
      }
      const parsed = SearchResponseSchema.safeParse(end.data);
      if (!parsed.success) {
        this.log.error({ requestId, issue: parsed.error.issues[0] }, 'search-service answered off-contract');
        failure = ApiError.internal();
        throw failure;
      }
      status = 200;
      return { response: parsed.data, headers: call.admission.headers };
    } finally {
      // Searches carry no token usage: the event counts the request (rate and quota like any other).
      void this.call.settle(call, status, null, failure);
    }
  }
}
