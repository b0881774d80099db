import { z } from 'zod';
import { CatalogEntrySchema, PriorityClassSchema } from './catalog.js';
import { WireErrorSchema } from './errors.js';

/**
 * What the gateway sends a service. Services never see an API key: they get who asks (member, key id),
 * the resolved catalog entry, the validated body and a deadline.
 */
export const ServiceRequestSchema = z.object({
  requestId: z.string(),
  memberId: z.string(),
  keyId: z.string(),
  model: CatalogEntrySchema,
  body: z.unknown(),
  /** Epoch milliseconds after which the service should give up. */
  deadline: z.number(),
  /** True when the gateway expects a stream of data frames. */
  stream: z.boolean(),
  /** The public endpoint the request came in on (`/v1/chat/completions` ...), for the service's usage event. */
  endpoint: z.string().optional(),
  /**
   * The subject root of the gateway's usage stream (its USAGE_SUBJECT_ROOT): the service records the
   * request's usage there too (`source: 'service'`), the ledger's fallback if the gateway dies before it
   * records the request itself. Absent: the service records nothing.
   */
  usageRoot: z.string().optional(),
  /**
   * The caller's class: its tier, or `batch` for a batch line. Orders the engine pools' wait queue and
   * becomes vLLM's `priority` where the model opts in; absent = `community`.
   */
  tier: PriorityClassSchema.optional(),
  /**
   * The model's `fallbacks` that the caller's tier may use, resolved, in order: tried by the service when
   * no endpoint of `model` can take the request. The answer then names the model that answered.
   */
  fallbacks: z.array(CatalogEntrySchema).optional(),
  /**
   * The NATS subject on which the gateway that admitted this request runs hosted web searches for it
   * (the Responses API's `web_search` tool): each search is admitted, dispatched and metered there
   * like POST /v1/search (HostedSearchAsk/HostedSearchAnswer). Absent: no hosted search.
   */
  search: z.string().optional(),
});
export interface ServiceRequest<B = unknown> extends Omit<z.infer<typeof ServiceRequestSchema>, 'body'> {
  body: B;
}

/** Exact usage reported by a service, counted against quota as `total_tokens`. */
export const UsageReportSchema = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  total_tokens: z.number().int().min(0),
});
export type UsageReport = z.infer<typeof UsageReportSchema>;

export const ZERO_USAGE: UsageReport = Object.freeze({
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
});

/**
 * Frames from a service to the gateway. On the wire each frame is one NATS message: a one-byte kind
 * then JSON, so the gateway can relay a data frame to SSE without parsing it.
 *   D<json>  a data item (a stream chunk)
 *   E<json>  the end: `{data?, usage}` (a unary reply is a single E frame carrying `data`)
 *   X<json>  an error: a WireError
 *   H<json>  a heartbeat: `{usage?}`, sent about every second while work is in flight, so the gateway
 *            tells a busy replica from a dead one (with the usage so far where the handler reports it)
 *   M<json>  meta: a StreamMeta, sent before the first data frame when the stream's headers need it
 *            (a fallback model answers)
 */
export const FrameKind = { data: 0x44, end: 0x45, error: 0x58, heartbeat: 0x48, meta: 0x4d } as const;

/** What a stream's meta frame says: a fallback model (`model`) answers instead of `fallback_from`. */
export const StreamMetaSchema = z.object({ model: z.string(), fallback_from: z.string() });
export type StreamMeta = z.infer<typeof StreamMetaSchema>;

/** How often a service sends heartbeat frames for the work in flight (ms). */
export const HEARTBEAT_MS = 1_000;
/** A replica that sends no frame at all for this long is presumed dead (ms); well above HEARTBEAT_MS. */
export const LIVENESS_MS = 4_500;

/**
 * Bytes parked in Redis (the Redis the gateway and the services share) because they do not fit in one
 * NATS message (1 MB by default): an audio upload on its way to the audio-service, or a long speech
 * result on its way back. The key carries a TTL; the reader deletes it when done.
 */
export const BlobRefSchema = z.object({
  key: z.string().min(1),
  bytes: z.number().int().min(0),
  contentType: z.string(),
});
export type BlobRef = z.infer<typeof BlobRefSchema>;

export const EndFrameSchema = z.object({
  data: z.unknown().optional(),
  usage: UsageReportSchema,
  /** For binary results (audio): base64 of the bytes and their content type. */
  binary: z.object({ base64: z.string(), contentType: z.string() }).optional(),
  /** A binary result too large for one NATS message: the gateway reads it from Redis and deletes it. */
  binaryBlob: BlobRefSchema.optional(),
  /**
   * Set when a fallback model answered (ServiceRequest.fallbacks): its id. Usage is that model's; the
   * gateway says so in `x-infer-fallback` (streams learn it earlier, from their meta frame).
   */
  model: z.string().optional(),
});
export type EndFrame = z.infer<typeof EndFrameSchema>;
/**
 * An error frame. `usage` is set when the work was cut short after it had used tokens (a service that
 * shuts down mid-stream): the gateway reports the error to the client and still records that usage.
 */
export const ErrorFrameSchema = WireErrorSchema.extend({ usage: UsageReportSchema.optional() });
export type ErrorFrame = z.infer<typeof ErrorFrameSchema>;
