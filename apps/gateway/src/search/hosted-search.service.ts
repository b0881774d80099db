import { randomUUID } from 'node:crypto';
import {
  ApiError,
  type HostedSearchAnswer,
  HostedSearchAskSchema,
  SEARCH_COUNT_DEFAULT,
  SearchRequestSchema,
} from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { AuthedKey } from '../auth/key-cache.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER, NATS } from '../infra/tokens.js';
import { SearchGateway } from './search.service.js';

/**
 * Most web searches one /v1/responses call may run (the hosted `web_search` tool): the chat-service
 * stops offering the tool before this (MAX_WEB_SEARCH_ROUNDS there); this is the gateway's own bound.
 */
export const MAX_HOSTED_SEARCHES = 16;

const enc = new TextEncoder();
const dec = new TextDecoder();

interface Open {
  auth: AuthedKey;
  runs: number;
}

/**
 * The hosted `web_search` tool of the Responses API, gateway side. The chat-service runs the tools
 * loop (model, search, model ...) inside one /v1/responses call; each search it needs comes back here
 * over NATS, on this gateway's own subject (the envelope's `search`), and runs through SearchGateway
 * exactly like POST /v1/search: admitted against the member's search budget (rate, concurrency, day
 * quota: a refusal is the same 429), dispatched to the search-service, one usage event each (endpoint
 * /v1/responses, model `web-search`). Only the calls this gateway admitted and that are still running
 * may search (open() ... close()), each at most MAX_HOSTED_SEARCHES times.
 */
@Injectable()
export class HostedSearch implements OnModuleInit, OnModuleDestroy {
  /** This gateway's subject for hosted searches (one per gateway process). */
  readonly subject: string;
  private readonly open = new Map<string, Open>();
  private sub: Subscription | null = null;

  constructor(
    @Inject(SearchGateway) private readonly search: SearchGateway,
    @Inject(NATS) private readonly nc: NatsConnection,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    this.subject = `${config.MODEL_SUBJECT_PREFIX}infer.gateway.hosted-search.${randomUUID()}`;
  }

  onModuleInit(): void {
    this.sub = this.nc.subscribe(this.subject, {
      callback: (err, msg) => {
        if (err || !msg.reply) return;
        const reply = msg.reply;
        void this.answer(msg.data).then(
          (a) => this.respond(reply, a),
          (e: unknown) => {
            this.log.error({ err: e }, 'hosted search failed');
            this.respond(reply, { error: ApiError.internal().toWire() });
          },
        );
      },
    });
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }

  /** Lets request `requestId` search on behalf of `auth` until the returned close() is called. */
  allow(requestId: string, auth: AuthedKey): () => void {
    this.open.set(requestId, { auth, runs: 0 });
    return () => this.open.delete(requestId);
  }

  private respond(reply: string, answer: HostedSearchAnswer): void {
    try {
      this.nc.publish(reply, enc.encode(JSON.stringify(answer)));
    } catch {
      // the connection is closing: the service's request times out on its own
    }
  }

  private async answer(data: Uint8Array): Promise<HostedSearchAnswer> {
    let ask: ReturnType<typeof HostedSearchAskSchema.parse>;
    try {
      ask = HostedSearchAskSchema.parse(JSON.parse(dec.decode(data)));
    } catch {
      return { error: ApiError.invalid('Malformed hosted search request.').toWire() };
    }
    const call = this.open.get(ask.requestId);
    if (!call) {
      return {
        error: new ApiError(409, 'This request may not search (it is not running on this gateway).', {
          type: 'invalid_request_error',
          code: 'search_not_allowed',
        }).toWire(),
      };
    }
    if (call.runs >= MAX_HOSTED_SEARCHES) {
      return {
        error: ApiError.invalid(
          `At most ${MAX_HOSTED_SEARCHES} web searches run in one response.`,
          'tools',
        ).toWire(),
      };
    }
    const n = ++call.runs;
    const body = SearchRequestSchema.safeParse({ query: ask.query, count: SEARCH_COUNT_DEFAULT });
    if (!body.success) {
      return {
        error: ApiError.invalid(
          `The model's web search query is not valid: ${body.error.issues[0]?.message}.`,
        ).toWire(),
      };
    }
    try {
      const out = await this.search.search(call.auth, body.data, `${ask.requestId}.ws${n}`, '/v1/responses');
      return { results: out.response.results };
    } catch (e) {
      if (e instanceof ApiError) return { error: e.toWire() };
      throw e;
    }
  }
}
