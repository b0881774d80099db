import {
  ApiError,
  type EndFrame,
  parseOrThrow,
  type ServiceRequest,
  type UsageReport,
} from '@infer/contracts';
import { type Logger, NatsRpcClientProxy } from '@infer/service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { InteractivePressure } from '../batch/pressure.js';
import { CatalogService } from '../catalog/catalog.service.js';
import { workIdOf } from '../common/request-id.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { hijackEventStream } from '../http/event-stream.js';
import { LOGGER, REDIS } from '../infra/tokens.js';
import { estimatePromptTokens } from '../limits/estimate.js';
import type { Admission } from '../limits/limits.engine.js';
import { LimitsService } from '../limits/limits.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { TrafficRecorder } from '../call/observers/traffic.js';
import { UsagePublisher } from '../usage/usage-publisher.js';
import { collectList } from './collect.js';
import { type ModelRoute, routeCaller } from './routes.js';

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
    @Inject(NatsRpcClientProxy) private readonly rpc: NatsRpcClientProxy,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(UsagePublisher) private readonly usage: UsagePublisher,
    @Inject(MetricsService) private readonly metrics: MetricsService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(LimitsService) private readonly limits: LimitsService,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(TrafficRecorder) private readonly traffic: TrafficRecorder,
    @Inject(InteractivePressure) private readonly pressure: InteractivePressure,
  ) {}

  /** The NATS subject of a route (MODEL_SUBJECT_PREFIX: tests only). */
  private subjectOf(route: ModelRoute): string {
    return this.config.MODEL_SUBJECT_PREFIX + route.subject;
  }

  /**
   * `input`: the body to validate, when it is not the parsed JSON body (multipart endpoints build it
   * from the form, e.g. /v1/audio/transcriptions).
   * `present`: turns the service's unary JSON result into the reply body (e.g. /v1/images/*: stored
   * image ids into signed URLs or base64); a failure there is settled with its own status.
   * `observe`: sees each stream item before it is written (awaited when it returns a promise), e.g.
   * /v1/responses keeping the output items of `response.completed`.
   */
  async handle(
    route: ModelRoute,
    req: FastifyRequest,
    reply: FastifyReply,
    input: unknown = req.body,
    present?: (data: unknown) => unknown | Promise<unknown>,
    observe?: (payload: Uint8Array) => Promise<void> | undefined,
  ): Promise<void> {
    const auth = routeCaller(route, req);
    const body = parseOrThrow(route.schema, input ?? {});
    const modelId = body.model ?? route.defaultModel;
    if (!modelId) throw ApiError.invalid('Missing required parameter: model.', 'model');
    const model = this.catalog.current.resolve(modelId, auth.tier, route.kinds, route.endpoint);
    // Every limit of the request, checked and taken in one Redis step (429/402 with Retry-After).
    const admission = await this.limits.admitModel(auth, model, body);
    void reply.headers(admission.headers);
    const stream = route.streamable && body.stream === true;
    const envelope: ServiceRequest = {
      requestId: workIdOf(req),
      memberId: auth.memberId,
      keyId: auth.keyId,
      model,
      body,
      deadline: Date.now() + this.config.REQUEST_TIMEOUT_MS,
      stream,
    };
    // The batch lane yields while interactive requests are in flight (batch/pressure.ts).
    this.pressure.begin();
    const started = performance.now();
    const f: Flight = { envelope, route, admission, tier: auth.tier, started };
    // A body larger than one NATS message (chat with big data: URIs ...) is a 413, not a failed publish:
    // RpcClient checks the bytes it would publish and fails the call with it (settled as a 413 below).
    if (route.collect && !stream) {
      await this.relayCollected(f, reply);
      return;
    }
    if (!stream) {
      let end: EndFrame;
      // A client that goes away stops the work in the service too (streams do the same in relayStream).
      let clientGone = false;
      const onClose = () => {
        if (!reply.raw.writableFinished) {
          clientGone = true;
          this.rpc.cancel(envelope.requestId);
        }
      };
      // `on`, not `once`: it is removed below either way, and 'close' comes once (no wrapper per request).
      reply.raw.on('close', onClose);
      try {
        // A little past the deadline, so the service's own 524 wins the race.
        end = await this.rpc.call(this.subjectOf(route), envelope, {
          idleTimeoutMs: this.config.REQUEST_TIMEOUT_MS + 5_000,
        });
      } catch (e) {
        reply.raw.off('close', onClose);
        this.settle(f, clientGone ? 499 : e instanceof ApiError ? e.status : 500, null);
        throw clientGone ? clientClosed() : e;
      }
      reply.raw.off('close', onClose);
      // A binary result too large for one NATS message waits in Redis (long speech): take it.
      const parked = end.binaryBlob ? await this.takeBlob(end.binaryBlob.key) : null;
      if (end.binaryBlob && !parked) {
        this.settle(f, 500, end);
        throw ApiError.internal('The result was lost on its way from the model service; retry.');
      }
      if (present && !end.binary && !end.binaryBlob) {
        try {
          end = { ...end, data: await present(end.data) };
        } catch (e) {
          this.settle(f, e instanceof ApiError ? e.status : 500, end);
          throw e;
        }
      }
      this.settle(f, 200, end);
      void reply.header('openai-model', model.id);
      if (end.binary) {
        // Raw bytes (audio): no JSON wrapper.
        void reply.type(end.binary.contentType).send(Buffer.from(end.binary.base64, 'base64'));
      } else if (end.binaryBlob && parked) {
        void reply.type(end.binaryBlob.contentType).send(parked);
      } else {
        void reply.send(end.data);
      }
      return;
    }
    await this.relayStream(f, req, reply, observe);
  }

  /** A unary JSON reply whose list field arrives in frames (collect.ts): embeddings, rerank. */
  private async relayCollected(f: Flight, reply: FastifyReply): Promise<void> {
    const { route, envelope } = f;
    let collected: Awaited<ReturnType<typeof collectList>>;
    let clientGone = false;
    try {
      const subject = this.subjectOf(route);
      collected = await collectList(this.rpc, subject, envelope, route.collect as { field: string }, {
        // A little past the deadline, so the service's own 524 wins the race.
        idleTimeoutMs: this.config.REQUEST_TIMEOUT_MS + 5_000,
        onClientGone: (cancel) =>
          reply.raw.once('close', () => {
            if (!reply.raw.writableFinished) {
              clientGone = true;
              cancel();
            }
          }),
      });
    } catch (e) {
      this.settle(f, clientGone ? 499 : e instanceof ApiError ? e.status : 500, null);
      throw clientGone ? clientClosed() : e;
    }
    this.settle(f, 200, collected.end);
    void reply.header('openai-model', envelope.model.id);
    void reply.type('application/json; charset=utf-8').send(collected.body);
  }

  /** Reads and deletes bytes a service parked in Redis (null when they expired). */
  private async takeBlob(key: string): Promise<Buffer | null> {
    try {
      const buf = await this.redis.getBuffer(key);
      await this.redis.del(key);
      return buf;
    } catch (err) {
      this.log.error({ err }, 'could not read a parked result from Redis');
      return null;
    }
  }

  private async relayStream(
    f: Flight,
    req: FastifyRequest,
    reply: FastifyReply,
    observe?: (payload: Uint8Array) => Promise<void> | undefined,
  ): Promise<void> {
    const { route, envelope, started } = f;
    const st = this.rpc.stream(this.subjectOf(route), envelope, {
      // Chat, completions and the Responses event sequence all send as the engine produces.
      idleTimeoutMs: this.config.IDLE_TIMEOUT_MS,
    });
    const it = st[Symbol.asyncIterator]();
    // Wait for the first chunk before committing to a 200: an early failure still gets its real status.
    let first: IteratorResult<Uint8Array>;
    try {
      first = await it.next();
    } catch (e) {
      this.settle(f, e instanceof ApiError ? e.status : 500, null);
      throw e;
    }
    const raw = hijackEventStream(reply, {
      'x-request-id': req.id,
      'openai-model': envelope.model.id,
      ...f.admission.headers,
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
    // Data frames relayed: the fallback measure of what the client received if the replica dies.
    let relayed = 0;
    try {
      if (!first.done) {
        await observe?.(first.value);
        write(raw, first.value);
        relayed++;
        for (let n = await it.next(); !n.done; n = await it.next()) {
          const seen = observe?.(n.value);
          if (seen) await seen;
          write(raw, n.value);
          relayed++;
        }
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
      // No final usage from the service (it failed, or said nothing within the cancel grace). What the
      // client received is still billed: the usage the replica last reported (its error frame or a
      // heartbeat), at least one completion token per data frame relayed (engines send about one token
      // per delta) over the prompt estimate.
      if (st.partialUsage || relayed > 0)
        end = { usage: cutShortUsage(st.partialUsage, relayed, envelope.body) };
    }
    this.settle(f, status, end);
  }

  /** One usage event per request that reached a service, whatever its outcome. */
  private settle(f: Flight, status: number, end: EndFrame | null): void {
    const { envelope: env, route, started } = f;
    const u = end?.usage;
    this.pressure.end();
    const latencyMs = performance.now() - started;
    // Releases the concurrency slots and charges the token budgets with the real usage.
    void f.admission.settle(u?.total_tokens ?? 0);
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
      latencyMs: Math.round(latencyMs),
      at: Date.now(),
    });
    // The console's overview: in-process counts, written to Redis once a second (traffic.ts).
    this.traffic.record(env.model.id, status, latencyMs, u?.total_tokens ?? 0);
    this.metrics.modelDone(
      env.model.id,
      f.tier,
      route.endpoint,
      status,
      u?.prompt_tokens ?? 0,
      u?.completion_tokens ?? 0,
      latencyMs / 1000,
    );
  }
}

/**
 * One request on its way to a service: what settle() needs besides the outcome. Passed along rather than
 * kept in WeakMaps keyed by the envelope: a WeakMap's table lives in the old generation, so each value
 * stayed reachable for scavenges after its request ended (until one of them found the key dead), and
 * the admissions of requests in flight at one scavenge were promoted at the next (docs/performance.md).
 */
interface Flight {
  envelope: ServiceRequest;
  route: ModelRoute;
  /** Its limits admission, settled once in settle(). */
  admission: Admission;
  /** The caller's tier (metrics by tier; never member ids). */
  tier: string;
  started: number;
}

const utf8 = new TextDecoder();

/**
 * What a call whose client went away ends with, whatever the service answered the cancel with: a
 * service that throws its abort reason answers a 500, which would be logged as a fault with a stack
 * (sendError) for an expected disconnect. Nobody reads the answer; the access line says 499.
 */
function clientClosed(): ApiError {
  return new ApiError(499, 'Client closed the request.');
}

/** The usage of a stream cut short: the replica's last report, or what the gateway saw relayed. */
function cutShortUsage(reported: UsageReport | null, relayed: number, body: unknown): UsageReport {
  const prompt = reported?.prompt_tokens ?? estimatePromptTokens(body);
  // The first frame of a chat stream carries only the role; a report may be up to a heartbeat old.
  const completion = Math.max(reported?.completion_tokens ?? 0, relayed - 1, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** `event: <type>` then the data line, for APIs whose stream items carry a `type` (Responses). */
function writeTypedEvent(raw: NodeJS.WritableStream, payload: Uint8Array): void {
  const json = utf8.decode(payload);
  const type = (JSON.parse(json) as { type?: unknown }).type;
  raw.write(`${typeof type === 'string' ? `event: ${type}\n` : ''}data: ${json}\n\n`);
}

function writeEvent(raw: NodeJS.WritableStream, payload: Uint8Array): void {
  raw.write(Buffer.concat([SSE_HEAD, payload, SSE_TAIL], SSE_HEAD.length + payload.length + SSE_TAIL.length));
}
