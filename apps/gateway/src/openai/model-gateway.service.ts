import { ApiError, type EndFrame, parseOrThrow, type ServiceRequest, TIERS } from '@infer/contracts';
import { type Logger, RpcClient } from '@infer/service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CatalogService } from '../catalog/catalog.service.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER } from '../infra/tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { UsagePublisher } from '../usage/usage-publisher.js';
import type { ModelRoute } from './routes.js';

const SSE_HEAD = Buffer.from('data: ');
const SSE_TAIL = Buffer.from('\n\n');
const SSE_DONE = Buffer.from('data: [DONE]\n\n');

/**
 * The request path of every model endpoint after auth: endpoint tier -> validate -> resolve model
 * (404 / 400 / 401) -> dispatch over NATS -> relay JSON or SSE -> publish usage.
 */
@Injectable()
export class ModelGateway {
  constructor(
    @Inject(RpcClient) private readonly rpc: RpcClient,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(UsagePublisher) private readonly usage: UsagePublisher,
    @Inject(MetricsService) private readonly metrics: MetricsService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  async handle(route: ModelRoute, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const auth = req.auth;
    if (!auth) throw ApiError.invalidKey();
    if (route.minTier && TIERS.indexOf(auth.tier) < TIERS.indexOf(route.minTier)) {
      throw ApiError.tierRestricted(
        `Your tier (${auth.tier}) cannot use ${route.endpoint}: it needs ${route.minTier} membership.`,
      );
    }
    const body = parseOrThrow(route.schema, req.body ?? {});
    const modelId = body.model ?? route.defaultModel;
    if (!modelId) throw ApiError.invalid('Missing required parameter: model.', 'model');
    const model = this.catalog.current.resolve(modelId, auth.tier, route.kinds, route.endpoint);
    const stream = route.streamable && body.stream === true;
    const envelope: ServiceRequest = {
      requestId: req.id,
      memberId: auth.memberId,
      keyId: auth.keyId,
      model,
      body,
      deadline: Date.now() + this.config.REQUEST_TIMEOUT_MS,
      stream,
    };
    const started = performance.now();
    if (!stream) {
      let end: EndFrame;
      try {
        // A little past the deadline, so the service's own 524 wins the race.
        end = await this.rpc.call(route.subject, envelope, {
          idleTimeoutMs: this.config.REQUEST_TIMEOUT_MS + 5_000,
        });
      } catch (e) {
        this.settle(envelope, route, e instanceof ApiError ? e.status : 500, started, null);
        throw e;
      }
      this.settle(envelope, route, 200, started, end);
      void reply.header('openai-model', model.id);
      if (end.binary) {
        // Raw bytes (audio): no JSON wrapper.
        void reply.type(end.binary.contentType).send(Buffer.from(end.binary.base64, 'base64'));
      } else {
        void reply.send(end.data);
      }
      return;
    }
    await this.relayStream(route, envelope, req, reply, started);
  }

  private async relayStream(
    route: ModelRoute,
    envelope: ServiceRequest,
    req: FastifyRequest,
    reply: FastifyReply,
    started: number,
  ): Promise<void> {
    const st = this.rpc.stream(route.subject, envelope, {
      idleTimeoutMs: this.config.IDLE_TIMEOUT_MS,
    });
    const it = st[Symbol.asyncIterator]();
    // Wait for the first chunk before committing to a 200: an early failure still gets its real status.
    let first: IteratorResult<Uint8Array>;
    try {
      first = await it.next();
    } catch (e) {
      this.settle(envelope, route, e instanceof ApiError ? e.status : 500, started, null);
      throw e;
    }
    const raw = reply.raw;
    reply.hijack();
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': req.id,
      'openai-model': envelope.model.id,
    });
    this.metrics.ttfb.observe({ route: route.endpoint }, (performance.now() - started) / 1000);
    this.metrics.openStreams.inc();
    let clientGone = false;
    const onClose = () => {
      if (!raw.writableFinished) {
        clientGone = true;
        st.cancel();
      }
    };
    raw.on('close', onClose);
    let status = 200;
    const typed = route.sse === 'typed';
    const write = typed ? writeTypedEvent : writeEvent;
    try {
      if (!first.done) {
        write(raw, first.value);
        for (let n = await it.next(); !n.done; n = await it.next()) write(raw, n.value);
      }
      if (!clientGone && !typed) raw.write(SSE_DONE);
    } catch (e) {
      const err = e instanceof ApiError ? e : ApiError.internal();
      status = err.status;
      if (status >= 500) this.log.error({ err: e, requestId: envelope.requestId }, 'stream failed');
      // Headers are out: report the failure the way OpenAI does, as an error event, then end.
      if (!clientGone) raw.write(`data: ${JSON.stringify(err.toBody())}\n\n`);
    } finally {
      this.metrics.openStreams.dec();
      if (!raw.writableEnded) raw.end();
    }
    if (clientGone) status = 499;
    let end: EndFrame | null = null;
    try {
      end = await st.end;
    } catch {
      // No final usage from the service (it failed, or said nothing within the cancel grace).
    }
    this.settle(envelope, route, status, started, end);
  }

  /** One usage event per request that reached a service, whatever its outcome. */
  private settle(
    env: ServiceRequest,
    route: ModelRoute,
    status: number,
    started: number,
    end: EndFrame | null,
  ): void {
    const u = end?.usage;
    this.usage.record({
      requestId: env.requestId,
      memberId: env.memberId,
      keyId: env.keyId,
      model: env.model.id,
      endpoint: route.endpoint,
      promptTokens: u?.prompt_tokens ?? 0,
      completionTokens: u?.completion_tokens ?? 0,
      totalTokens: u?.total_tokens ?? 0,
      status,
      latencyMs: Math.round(performance.now() - started),
      at: Date.now(),
    });
  }
}

const utf8 = new TextDecoder();

/** `event: <type>` then the data line, for APIs whose stream items carry a `type` (Responses). */
function writeTypedEvent(raw: NodeJS.WritableStream, payload: Uint8Array): void {
  const json = utf8.decode(payload);
  const type = (JSON.parse(json) as { type?: unknown }).type;
  raw.write(`${typeof type === 'string' ? `event: ${type}\n` : ''}data: ${json}\n\n`);
}

function writeEvent(raw: NodeJS.WritableStream, payload: Uint8Array): void {
  raw.write(Buffer.concat([SSE_HEAD, payload, SSE_TAIL], SSE_HEAD.length + payload.length + SSE_TAIL.length));
}
