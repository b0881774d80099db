import type { CatalogEntry, EndFrame, RequestBodies } from '@infer/contracts';
import type { Admission, LimitSubject } from '../limits/limits.service.js';

/** What kind of work a call is: observers that only count model traffic look at it. */
export type CallKind = 'model' | 'search';

/**
 * One governed call, from admission to settlement: what every observer sees. One object per request,
 * filled in as the call goes (no second record is built for the observers), with the fields a request
 * log needs. `status` is 0 until the call is settled.
 */
export interface CallOutcome {
  readonly kind: CallKind;
  readonly requestId: string;
  readonly memberId: string;
  readonly keyId: string;
  /** The caller's tier (metrics by tier; never member ids in metrics). */
  readonly tier: string;
  /**
   * The model's id; undefined when the request was refused before a model was resolved. After a
   * fallback (Call.fallbackFrom), the model that answered.
   */
  model: string | undefined;
  /** Public path (`/v1/chat/completions`, `/v1/messages`, `/mcp` ...): the usage `endpoint`. */
  readonly endpoint: string;
  /** Whether the answer is (or was asked to be) a stream. */
  readonly stream: boolean;
  /** A /v1/batches line (usage events are batch-marked; the runner waits for their ack). */
  readonly batch: boolean;
  /** False for requests refused before dispatch (validation, model, limits): no usage event. */
  admitted: boolean;
  /** HTTP status of the outcome: 200, the error's status, 499 when the client went away. */
  status: number;
  /** The error envelope's `code` of a failure or refusal (`rate_limit_exceeded`, `model_not_found` ...). */
  errorCode: string | null;
  /** The limit that refused it (`key.requests_per_minute`, `member.tokens_per_month` ...), if one did. */
  limit: string | null;
  /** The service's final usage (or what was relayed of a stream cut short); null without one. */
  usage: EndFrame['usage'] | null;
  /** What it cost in nano-dollars at the answering model's prices (0 until settled; ADR 0101). */
  cost: number;
  /** performance.now() when the call was admitted (or refused). */
  readonly started: number;
  /** Milliseconds from admission to settlement. */
  latencyMs: number;
  /** Milliseconds from admission to the first streamed chunk (streams only). */
  firstTokenMs: number | null;
  /** The request's W3C trace id when tracing is on. */
  readonly traceId: string | undefined;
  /** Wall-clock time of settlement (ms since the epoch). */
  at: number;
  /**
   * The request and response bodies, redacted and capped, when body logging is on for the member or
   * the model (docs/adr/0110-request-log.md); set at settlement, absent otherwise.
   */
  bodies?: RequestBodies;
}

/**
 * A cross-cutting concern of every call (usage, console traffic, metrics, batch pressure, a request
 * log ...): registered as a Nest provider and listed under CALL_OBSERVERS (call.providers.ts).
 * Observers must not throw and should not block; CallSettlement isolates each one anyway (a failing
 * observer is logged and skipped: the request and the other observers, usage first, go on).
 */
export interface CallObserver {
  /** A call admitted and about to be dispatched (not for refusals). */
  begin?(call: CallOutcome): void;
  /** The first chunk of a stream is about to be written. */
  firstChunk?(call: CallOutcome): void;
  /**
   * The call's outcome: every admitted call once, and every refusal (admitted = false) once. A promise
   * returned here is awaited only by callers that ask for it (the batch runner waits for the usage
   * event's JetStream ack before it writes the line's checkpoint).
   */
  settled(call: CallOutcome): void | Promise<void>;
}

/** The multi-provider token of the observers (an array, in the order they run). */
export const CALL_OBSERVERS = Symbol('CALL_OBSERVERS');

/** Who a call is for, and what it asks for: the input of GovernedCall.admit*. */
export interface CallSpec {
  kind: CallKind;
  requestId: string;
  /** The caller's limits subject (an authenticated key, or a batch's stored key). */
  caller: LimitSubject;
  endpoint: string;
  /** The NATS subject of the service that serves it (already prefixed). */
  subject: string;
  model: CatalogEntry;
  /** The validated internal body (a front door translates its own wire shape first). */
  body: { stream?: boolean | null } & object;
  stream: boolean;
  /** Milliseconds the service has for it (the envelope's deadline is now + this). */
  deadlineMs: number;
  batch?: boolean;
  traceId?: string;
  /** The model's fallbacks the caller's tier may use (CatalogSnapshot.fallbacksFor), for the envelope. */
  fallbacks?: CatalogEntry[] | undefined;
  /** The subject on which this gateway runs hosted web searches for the call (HostedSearch), if it may. */
  search?: string;
}

/** An admitted call: its outcome record plus what dispatch and settlement need. */
export interface Call extends CallOutcome {
  readonly spec: CallSpec;
  readonly admission: Admission;
  /** Set when a fallback model answered: the model asked for (`model` is then the answering one). */
  fallbackFrom?: string;
  /** Body logging is on for the member or the model: the answer is kept for the log (ADR 0110). */
  readonly logBodies: boolean;
}
