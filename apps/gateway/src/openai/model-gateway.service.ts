import { ApiError, parseOrThrow } from '@infer/contracts';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthedKey } from '../auth/key-cache.js';
import { GovernedCall } from '../call/governed-call.js';
import { OPENAI_DATA_WIRE, OPENAI_TYPED_WIRE, type WireFormat } from '../call/wire.js';
import { CatalogService } from '../catalog/catalog.service.js';
import { workIdOf } from '../common/request-id.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { TRACE_ID_HEADER } from '../telemetry/http-tracing.js';
import { type ModelRoute, routeCaller } from './routes.js';

/**
 * The OpenAI front door of every model endpoint after auth: endpoint tier -> validate -> resolve model
 * (404 / 400 / 401), then the governed call (call/governed-call.ts: admit, envelope, dispatch, relay in
 * the OpenAI wire shape, settle). Refusals before admission are settled too, so that observers see them.
 */
@Injectable()
export class ModelGateway {
  constructor(
    @Inject(GovernedCall) private readonly call: GovernedCall,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /**
   * `input`: the body to validate, when it is not the parsed JSON body (multipart endpoints build it
   * from the form, e.g. /v1/audio/transcriptions).
   * `present`: turns the service's unary JSON result into the reply body (e.g. /v1/images/*: stored
   * image ids into signed URLs or base64); a failure there is settled with its own status.
   * `observe`: sees each stream item before it is written (awaited when it returns a promise), e.g.
   * /v1/responses keeping the output items of `response.completed`.
   * `search`: the subject on which this gateway runs hosted web searches for the call (HostedSearch).
   */
  async handle(
    route: ModelRoute,
    req: FastifyRequest,
    reply: FastifyReply,
    input: unknown = req.body,
    present?: (data: unknown) => unknown | Promise<unknown>,
    observe?: (payload: Uint8Array) => Promise<void> | undefined,
    search?: string,
  ): Promise<void> {
    const auth = routeCaller(route, req);
    const requestId = workIdOf(req);
    let body: { model?: string; stream?: boolean | null };
    let model: ReturnType<CatalogService['current']['resolve']>;
    try {
      body = parseOrThrow(route.schema, input ?? {});
      const modelId = body.model ?? route.defaultModel;
      if (!modelId) throw ApiError.invalid('Missing required parameter: model.', 'model');
      model = this.catalog.current.resolve(modelId, auth.tier, route.kinds, route.endpoint, auth.models);
    } catch (e) {
      this.call.refused(refusal(auth, requestId, route, reply), e);
      throw e;
    }
    const stream = route.streamable && body.stream === true;
    // Every limit of the request, checked and taken in one Redis step (429/402 with Retry-After).
    const call = await this.call.admitModel({
      kind: 'model',
      requestId,
      caller: auth,
      endpoint: route.endpoint,
      subject: this.config.MODEL_SUBJECT_PREFIX + route.subject,
      model,
      body,
      stream,
      deadlineMs: this.config.REQUEST_TIMEOUT_MS,
      traceId: reply.getHeader(TRACE_ID_HEADER) as string | undefined,
      fallbacks: this.catalog.current.fallbacksFor(model, auth.tier),
      ...(search ? { search } : {}),
    });
    void reply.headers(call.admission.headers);
    // A body larger than one NATS message (chat with big data: URIs ...) is a 413, not a failed publish:
    // RpcClient checks the bytes it would publish and fails the call with it (settled as a 413).
    await this.call.relay(call, req, reply, wireOf(route, present, observe), route.collect);
  }
}

function refusal(auth: AuthedKey, requestId: string, route: ModelRoute, reply: FastifyReply) {
  return {
    kind: 'model' as const,
    requestId,
    memberId: auth.memberId,
    keyId: auth.keyId,
    tier: auth.tier,
    endpoint: route.endpoint,
    traceId: reply.getHeader(TRACE_ID_HEADER) as string | undefined,
  };
}

/** The OpenAI wire of a route; a per-request one only when the controller passes present/observe. */
function wireOf(
  route: ModelRoute,
  present?: (data: unknown) => unknown | Promise<unknown>,
  observe?: (payload: Uint8Array) => Promise<void> | undefined,
): WireFormat {
  const base = route.sse === 'typed' ? OPENAI_TYPED_WIRE : OPENAI_DATA_WIRE;
  if (!present && !observe) return base;
  return {
    ...base,
    ...(present ? { present: (data: unknown) => present(data) } : {}),
    ...(observe
      ? {
          chunk: (payload: Uint8Array, out: NodeJS.WritableStream, call) => {
            const seen = observe(payload);
            if (!seen) return base.chunk(payload, out, call);
            return seen.then(() => base.chunk(payload, out, call));
          },
        }
      : {}),
  };
}
