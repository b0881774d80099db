import {
  ApiError,
  type CatalogEntry,
  costOf,
  type EndFrame,
  type PriorityClass,
  priceTable,
  type ServiceRequest,
  type UsageReport,
} from '@infer/contracts';
import { NatsRpcClientProxy, usageOfError } from '@infer/rpc';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { hijackEventStream } from '../http/event-stream.js';
import { estimatePromptTokens } from '../limits/estimate.js';
import { type Admission, LimitsService } from '../limits/limits.service.js';
import { refusedLimitOf } from '../limits/limits.store.js';
import { FrameCapture, requestBodies } from './body-log.js';
import { CallSettlement } from './call-settlement.service.js';
import { type CollectSpec, collectList } from './collect.js';
import type { Call, CallKind, CallOutcome, CallSpec } from './outcome.js';
import { ParkedResults } from './parked-results.store.js';
import type { WireFormat } from './wire.js';

/** What a refusal before admission knows of its caller (the fields of CallOutcome it can fill). */
export interface RefusedCall {
  kind: CallKind;
  requestId: string;
  memberId: string;
  keyId: string;
  tier: string;
  endpoint: string;
  model?: string;
  stream?: boolean;
  batch?: boolean;
  traceId?: string;
}

/**
 * THE governed call: every model route, web search (POST /v1/search and the MCP tool) and every batch
 * line go through it, in five steps:
 *
 *   admit     limits checked and taken in one Redis step (admitModel / admitSearch); a refusal is
 *             settled too (observers see status, code and the refusing limit) and rethrown
 *   envelope  the ServiceRequest: request id, member, key, resolved model, validated body, deadline
 *   dispatch  NATS request/reply (call), frames joined (collect) or streamed (relay)
 *   relay     unary JSON or SSE in the front door's wire shape (WireFormat), client disconnects
 *             cancel the work in the service
 *   settle    the admission settled (slots released, tokens charged), then every observer
 *             (CALL_OBSERVERS: usage, console traffic, metrics, batch pressure ...)
 *
 * Extension points (docs/adr/0030-governed-call.md):
 *   - a new front door (a different wire shape) translates its body into a route's internal body,
 *     admits with admitModel, then calls relay() with its own WireFormat: `present` for the unary
 *     JSON, `chunk` for its SSE events, `end` for its terminal events (instead of `data: [DONE]`),
 *     `streamError` for a failure after the stream started and `errorBody` for one before;
 *     refusals before admission (validation, unknown model) go to refused() so observers see them;
 *   - a new cross-cutting concern (a request log, budgets, audit) is a CallObserver provider added to
 *     CALL_OBSERVER_CLASSES (call.providers.ts): it sees begin, first chunk and the settled outcome of
 *     every call, refusals included, and can fail without failing the request;
 *   - a new kind of backend (engine pools) stays behind the NATS subject of the route.
 */
@Injectable()
export class GovernedCall {
  constructor(
    @Inject(NatsRpcClientProxy) private readonly rpc: NatsRpcClientProxy,
    @Inject(LimitsService) private readonly limits: LimitsService,
    @Inject(CallSettlement) private readonly settlement: CallSettlement,
    @Inject(ParkedResults) private readonly parked: ParkedResults,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** Every limit of a model request, checked and taken at once (429/402 with Retry-After). */
  admitModel(spec: CallSpec): Promise<Call> {
    return this.admitWith(spec, this.limits.admitModel(spec.caller, spec.model, spec.body));
  }

  /** The search budget (20/min, 3 concurrent, 500/day by default). */
  admitSearch(spec: CallSpec): Promise<Call> {
    // A priced search reserves its price against the budgets (settled with its real cost).
    return this.admitWith(spec, this.limits.admitSearch(spec.caller, priceTable(spec.model).search));
  }

  private async admitWith(spec: CallSpec, admitting: Promise<Admission>): Promise<Call> {
    let admission: Admission;
    try {
      admission = await admitting;
    } catch (e) {
      this.refused(
        {
          kind: spec.kind,
          requestId: spec.requestId,
          memberId: spec.caller.memberId,
          keyId: spec.caller.keyId,
          tier: spec.caller.tier,
          endpoint: spec.endpoint,
          model: spec.model.id,
          stream: spec.stream,
          batch: spec.batch,
          traceId: spec.traceId,
        },
        e,
      );
      throw e;
    }
    const call: Call = {
      spec,
      admission,
      kind: spec.kind,
      requestId: spec.requestId,
      memberId: spec.caller.memberId,
      keyId: spec.caller.keyId,
      tier: spec.caller.tier,
      model: spec.model.id,
      endpoint: spec.endpoint,
      stream: spec.stream,
      batch: spec.batch === true,
      admitted: true,
      status: 0,
      errorCode: null,
      limit: null,
      usage: null,
      cost: 0,
      started: performance.now(),
      latencyMs: 0,
      firstTokenMs: null,
      traceId: spec.traceId,
      at: 0,
      // The member's switch came with its cached key, the model's with the cached catalog: no lookup.
      // Batch lines never: their bodies are the batch's own input and output files.
      logBodies: spec.batch !== true && (spec.caller.logBodies === true || spec.model.log_bodies === true),
    };
    this.settlement.begin(call);
    return call;
  }

  /**
   * A request refused before dispatch (bad body, unknown model, a limit): observers see it (a request
   * log records refusals); nothing was taken, so there is no usage event and no admission to settle.
   */
  refused(who: RefusedCall, e: unknown): void {
    const err = e instanceof ApiError ? e : null;
    const outcome: CallOutcome = {
      kind: who.kind,
      requestId: who.requestId,
      memberId: who.memberId,
      keyId: who.keyId,
      tier: who.tier,
      model: who.model,
      endpoint: who.endpoint,
      stream: who.stream === true,
      batch: who.batch === true,
      admitted: false,
      status: err ? err.status : 500,
      errorCode: err?.code ?? null,
      limit: refusedLimitOf(e) ?? null,
      usage: null,
      cost: 0,
      started: performance.now(),
      latencyMs: 0,
      firstTokenMs: null,
      traceId: who.traceId,
      at: Date.now(),
    };
    this.settlement.settled(outcome);
  }

  /** The service request of an admitted call. */
  envelope(call: Call): ServiceRequest {
    const s = call.spec;
    return {
      requestId: s.requestId,
      memberId: s.caller.memberId,
      keyId: s.caller.keyId,
      model: s.model,
      body: s.body,
      deadline: Date.now() + s.deadlineMs,
      stream: s.stream,
      // The service records the request's usage too, on this gateway's usage stream: the ledger's
      // fallback when this gateway dies before settling (batch lines have their runner's own recovery).
      ...(s.batch ? {} : { endpoint: s.endpoint, usageRoot: this.config.USAGE_SUBJECT_ROOT }),
      // The engine pools' queue class and vLLM priority; the tier's fallbacks (docs/engine-pools.md).
      tier: s.batch ? 'batch' : (s.caller.tier as PriorityClass),
      fallbacks: s.fallbacks,
      ...(s.search ? { search: s.search } : {}),
    };
  }

  /** A fallback model answered (the end frame or a stream's meta frame says which). */
  private fellBack(call: Call, model: string | undefined): void {
    if (!model || model === call.spec.model.id) return;
    call.fallbackFrom = call.spec.model.id;
    call.model = model;
  }

  /** Unary dispatch: the service's end frame. `onClientGone` hands over the cancel of the call. */
  dispatch(call: Call, envelope: ServiceRequest = this.envelope(call)): Promise<EndFrame> {
    // A little past the deadline, so the service's own 524 wins the race.
    return this.rpc.call(call.spec.subject, envelope, { idleTimeoutMs: call.spec.deadlineMs + 5_000 });
  }

  /** A unary reply whose list field arrives in frames (embeddings, rerank: collect.ts). */
  collect(
    call: Call,
    spec: CollectSpec,
    onClientGone: (cancel: () => void) => void,
    envelope: ServiceRequest = this.envelope(call),
  ) {
    return collectList(this.rpc, call.spec.subject, envelope, spec, {
      idleTimeoutMs: call.spec.deadlineMs + 5_000,
      onClientGone,
    });
  }

  /**
   * The last step of every admitted call, once: the admission settled with the real usage (slots
   * released, token budgets charged), then the observers. Returns what CallSettlement.settled returns:
   * null, or a promise of the observers that asked to be waited for (batch lines' usage ack).
   */
  settle(
    call: Call,
    status: number,
    end: EndFrame | null,
    err?: unknown,
    answer?: string | FrameCapture,
  ): Promise<void> | null {
    const u = end?.usage ?? null;
    if (end?.model) this.fellBack(call, end.model);
    call.status = status;
    call.usage = u;
    call.latencyMs = performance.now() - call.started;
    call.at = Date.now();
    if (status >= 400)
      call.errorCode = err instanceof ApiError ? err.code : status === 499 ? 'client_closed' : null;
    call.cost = callCost(call, status);
    if (call.logBodies) call.bodies = this.bodiesOf(call, end, err, answer);
    void call.admission.settle(u?.total_tokens ?? 0, call.cost);
    return this.settlement.settled(call);
  }

  /**
   * The bodies of a call whose member or model logs them: the validated request, and the answer (the
   * reply's JSON, a stream's frames, a collected list, or the error), redacted and capped.
   */
  private bodiesOf(call: Call, end: EndFrame | null, err: unknown, answer?: string | FrameCapture) {
    const max = this.config.REQUEST_LOG_BODY_MAX_BYTES;
    let response: string | { text: string; truncated: boolean };
    if (answer instanceof FrameCapture) response = answer.logged();
    else if (answer !== undefined) response = answer;
    else if (err instanceof ApiError)
      response = JSON.stringify({ error: { code: err.code, message: err.message } });
    else if (end?.binary || end?.binaryBlob)
      response = `[binary: ${end.binary?.contentType ?? end.binaryBlob?.contentType}]`;
    else if (end && end.data !== undefined) response = JSON.stringify(end.data);
    else response = '';
    return requestBodies(JSON.stringify(call.spec.body), response, max);
  }

  /**
   * Dispatches an admitted call and relays the answer to the client in `wire`'s shape: unary JSON,
   * collected frames (`collect`), raw bytes (audio) or SSE (call.stream). Settles it, whatever happens.
   */
  async relay(
    call: Call,
    req: FastifyRequest,
    reply: FastifyReply,
    wire: WireFormat,
    collect?: CollectSpec,
  ): Promise<void> {
    try {
      if (call.stream) await this.relayStream(call, req, reply, wire);
      else if (collect) await this.relayCollected(call, reply, wire, collect);
      else await this.relayUnary(call, reply, wire);
    } catch (e) {
      if (!wire.errorBody || !(e instanceof ApiError) || reply.sent || reply.raw.headersSent) throw e;
      for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
      void reply.code(e.status).type('application/json; charset=utf-8').send(wire.errorBody(e));
    }
  }

  private async relayUnary(call: Call, reply: FastifyReply, wire: WireFormat): Promise<void> {
    const envelope = this.envelope(call);
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
      end = await this.dispatch(call, envelope);
    } catch (e) {
      reply.raw.off('close', onClose);
      // Work that failed after using tokens (its error frame says how many) is still metered.
      const used = usageOfError(e);
      this.settle(
        call,
        clientGone ? 499 : e instanceof ApiError ? e.status : 500,
        used ? { usage: used } : null,
        e,
      );
      throw clientGone ? clientClosed() : e;
    }
    reply.raw.off('close', onClose);
    // A binary result too large for one NATS message waits in Redis (long speech): take it.
    const parked = end.binaryBlob ? await this.parked.take(end.binaryBlob.key) : null;
    if (end.binaryBlob && !parked) {
      const err = ApiError.internal('The result was lost on its way from the model service; retry.');
      this.settle(call, 500, end, err);
      throw err;
    }
    if (wire.present && !end.binary && !end.binaryBlob) {
      try {
        end = { ...end, data: await wire.present(end.data, call) };
      } catch (e) {
        this.settle(call, e instanceof ApiError ? e.status : 500, end, e);
        throw e;
      }
    }
    this.settle(call, 200, end);
    if (wire.headers) void reply.headers(wire.headers(call));
    if (end.binary) {
      // Raw bytes (audio): no JSON wrapper.
      void reply.type(end.binary.contentType).send(Buffer.from(end.binary.base64, 'base64'));
    } else if (end.binaryBlob && parked) {
      void reply.type(end.binaryBlob.contentType).send(parked);
    } else {
      void reply.send(end.data);
    }
  }

  private async relayCollected(call: Call, reply: FastifyReply, wire: WireFormat, spec: CollectSpec) {
    let collected: Awaited<ReturnType<typeof collectList>>;
    let clientGone = false;
    try {
      collected = await this.collect(call, spec, (cancel) =>
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) {
            clientGone = true;
            cancel();
          }
        }),
      );
    } catch (e) {
      this.settle(call, clientGone ? 499 : e instanceof ApiError ? e.status : 500, null, e);
      throw clientGone ? clientClosed() : e;
    }
    this.settle(
      call,
      200,
      collected.end,
      undefined,
      call.logBodies ? collected.body.toString('utf8') : undefined,
    );
    if (wire.headers) void reply.headers(wire.headers(call));
    void reply.type('application/json; charset=utf-8').send(collected.body);
  }

  private async relayStream(call: Call, req: FastifyRequest, reply: FastifyReply, wire: WireFormat) {
    const envelope = this.envelope(call);
    const st = this.rpc.stream(call.spec.subject, envelope, {
      // Chat, completions and the Responses event sequence all send as the engine produces.
      idleTimeoutMs: this.config.IDLE_TIMEOUT_MS,
    });
    const it = st[Symbol.asyncIterator]();
    // Wait for the first chunk before committing to a 200: an early failure still gets its real status.
    let first: IteratorResult<Uint8Array>;
    try {
      first = await it.next();
    } catch (e) {
      this.settle(call, e instanceof ApiError ? e.status : 500, null, e);
      throw e;
    }
    if (st.meta) this.fellBack(call, st.meta.model);
    const raw = hijackEventStream(reply, {
      'x-request-id': req.id,
      ...wire.headers?.(call),
      ...call.admission.headers,
    });
    call.firstTokenMs = performance.now() - call.started;
    this.settlement.firstChunk(call);
    let clientGone = false;
    const onClose = () => {
      if (!raw.writableFinished) {
        clientGone = true;
        st.cancel();
      }
    };
    raw.on('close', onClose);
    let status = 200;
    let failure: unknown;
    // Data frames relayed: the fallback measure of what the client received if the replica dies.
    let relayed = 0;
    // The frames as the service sent them, for the body log (only when it is on for this call).
    const capture = call.logBodies ? new FrameCapture(this.config.REQUEST_LOG_BODY_MAX_BYTES) : undefined;
    // Keep-alive: one timer per stream, no work per chunk (a tick compares the relayed count).
    let keepAlive: NodeJS.Timeout | undefined;
    if (wire.keepAlive) {
      const { frame, everyMs } = wire.keepAlive;
      let seen = relayed;
      keepAlive = setInterval(() => {
        if (relayed === seen && !raw.writableEnded && !clientGone) raw.write(frame);
        seen = relayed;
      }, everyMs);
      keepAlive.unref();
    }
    try {
      if (!first.done) {
        capture?.add(first.value);
        const w = wire.chunk(first.value, raw, call);
        if (w) await w;
        relayed++;
        for (let n = await it.next(); !n.done; n = await it.next()) {
          capture?.add(n.value);
          const p = wire.chunk(n.value, raw, call);
          if (p) await p;
          relayed++;
        }
      }
      if (!clientGone) wire.end?.(raw, call);
    } catch (e) {
      const err = e instanceof ApiError ? e : ApiError.internal();
      failure = err;
      status = err.status;
      if (status >= 500) req.log.error({ err: e, requestId: envelope.requestId }, 'stream failed');
      // Headers are out: report the failure in the front door's shape, then end.
      if (!clientGone) wire.streamError(err, raw, call);
    } finally {
      clearInterval(keepAlive);
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
    this.settle(call, status, end, failure, capture);
  }
}

/**
 * What a settled call cost at the prices of the model that answered (a fallback's own prices), in
 * nano-dollars: tokens, and for a success the images it made (`n`) or the search it ran.
 */
export function callCost(call: Call, status: number): number {
  const s = call.spec;
  let model: CatalogEntry = s.model;
  if (call.fallbackFrom && call.model) model = s.fallbacks?.find((m) => m.id === call.model) ?? model;
  const prices = priceTable(model);
  if (!prices.priced) return 0;
  const u = call.usage;
  const n = (s.body as { n?: unknown }).n;
  return costOf(prices, {
    kind: model.kind,
    promptTokens: u?.prompt_tokens ?? 0,
    completionTokens: u?.completion_tokens ?? 0,
    images: typeof n === 'number' && n > 0 ? n : 1,
    batch: call.batch,
    failed: status >= 400,
  });
}

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
