import {
  ApiError,
  type EndFrame,
  type SearchRequest,
  type SearchResponse,
  SearchResponseSchema,
  type ServiceRequest,
  Subjects,
} from '@infer/contracts';
import { type Logger, NatsRpcClientProxy } from '@infer/service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { AuthedKey } from '../auth/key-cache.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER } from '../infra/tokens.js';
import { LimitsService } from '../limits/limits.service.js';
import { UsagePublisher } from '../usage/usage-publisher.js';
import { WEB_SEARCH_ENTRY } from './web-search-entry.js';

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
  constructor(
    @Inject(NatsRpcClientProxy) private readonly rpc: NatsRpcClientProxy,
    @Inject(LimitsService) private readonly limits: LimitsService,
    @Inject(UsagePublisher) private readonly usage: UsagePublisher,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

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
    const admission = await this.limits.admitSearch(auth);
    const envelope: ServiceRequest<SearchRequest> = {
      requestId,
      memberId: auth.memberId,
      keyId: auth.keyId,
      model: WEB_SEARCH_ENTRY,
      body,
      deadline: Date.now() + SEARCH_DEADLINE_MS,
      stream: false,
    };
    const started = performance.now();
    let status = 500;
    try {
      let end: EndFrame;
      try {
        end = await this.rpc.call(this.subject, envelope, { idleTimeoutMs: SEARCH_DEADLINE_MS + 5_000 });
      } catch (e) {
        status = e instanceof ApiError ? e.status : 500;
        throw e;
      }
      const parsed = SearchResponseSchema.safeParse(end.data);
      if (!parsed.success) {
        this.log.error({ requestId, issue: parsed.error.issues[0] }, 'search-service answered off-contract');
        throw ApiError.internal();
      }
      status = 200;
      return { response: parsed.data, headers: admission.headers };
    } finally {
      void admission.release();
      this.usage.record({
        requestId,
        memberId: auth.memberId,
        keyId: auth.keyId,
        model: WEB_SEARCH_ENTRY.id,
        endpoint,
        promptTokens: 0,
        completionTokens: 0,
        totalTokens: 0,
        status,
        latencyMs: Math.round(performance.now() - started),
        at: Date.now(),
      });
    }
  }
}
