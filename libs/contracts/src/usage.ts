import { z } from 'zod';

/** A logged request's bodies (docs/adr/0110-request-log.md, "Bodies"). */
export const RequestBodiesSchema = z.object({
  /** The request body as the gateway validated it (JSON), redacted and capped. */
  request: z.string(),
  /** The answer: the JSON of a unary reply, a stream's frames one per line; redacted and capped. */
  response: z.string(),
  requestTruncated: z.boolean().optional(),
  responseTruncated: z.boolean().optional(),
});
export type RequestBodies = z.infer<typeof RequestBodiesSchema>;

/**
 * One finished (or cancelled) request, as published by the gateway on the durable usage stream and
 * written to the ledger once, keyed by requestId.
 */
export const UsageEventSchema = z.object({
  requestId: z.string(),
  memberId: z.string(),
  keyId: z.string(),
  model: z.string(),
  endpoint: z.string(),
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  totalTokens: z.number().int().min(0),
  /** HTTP status the client got (499 for a client that went away mid-stream). */
  status: z.number().int(),
  latencyMs: z.number().int().min(0),
  /** Epoch milliseconds when the request finished. */
  at: z.number().int(),
  /** A line of a batch (POST /v1/batches): billed at the model's `batch_price_factor`. */
  batch: z.boolean().optional(),
  /**
   * What the request cost, in nano-dollars (1e-9 dollars), priced when it ended at the model's prices
   * of that moment (catalog `pricing`, batch lines at `batch_price_factor`): the ledger stores it as
   * it is, so a later price change never rewrites history (docs/adr/0101-money.md). Absent: 0.
   */
  cost: z.number().int().min(0).optional(),
  /**
   * Who recorded it: the gateway that answered the client (the default), or the service that did the
   * work. A service records every request it served as well, so that usage reaches the ledger when the
   * gateway that admitted the request dies; the ledger writer keeps the gateway's event when both
   * arrive (it waits LEDGER_SERVICE_GRACE_MS before writing a service's event), one row per request.
   */
  source: z.enum(['gateway', 'service']).optional(),
  // The request log's fields (docs/adr/0110-request-log.md): the usage event is also the log record,
  // so the log costs no second publish. Optional: events from older publishers still parse.
  /**
   * A request refused before dispatch (bad body, unknown model, a limit): a request-log record only,
   * with zero usage. The ledger writer never writes it to the usage ledger (quotas and usage reports
   * count only what reached a service).
   */
  refused: z.boolean().optional(),
  /** The error envelope's `code` of a failure or refusal. */
  errorCode: z.string().nullish(),
  /** The limit that refused it (`key.requests_per_minute` ...). */
  limit: z.string().nullish(),
  /** Milliseconds from admission to the first streamed chunk (streams only). */
  firstTokenMs: z.number().int().min(0).nullish(),
  /** The request's W3C trace id when tracing is on. */
  traceId: z.string().nullish(),
  /**
   * The request and response bodies, only when body logging is on for the member or the model:
   * redacted and capped by the gateway (REQUEST_LOG_BODY_MAX_BYTES). The ledger writer stores them in
   * request_log_body; an event with bodies travels alone (never batched with others).
   */
  bodies: RequestBodiesSchema.optional(),
});
export type UsageEvent = z.infer<typeof UsageEventSchema>;

/** JetStream stream that holds usage events until the ledger writer has stored them. */
export const UsageStream = {
  name: 'USAGE',
  /** Root of the event subjects; tests use their own root and stream so they never mix with real usage. */
  root: 'usage.events',
  subjects: ['usage.events.>'],
  /** Subject of one event: <root>.<model> (`_` for a refusal before a model was resolved). */
  subject: (model: string, root = 'usage.events') =>
    `${root}.${model.replace(/[^A-Za-z0-9_-]/g, '_') || '_'}`,
  /** Durable consumer of the ledger writer. */
  consumer: 'ledger-writer',
} as const;
