import { z } from 'zod';
import { MetadataSchema } from './common.js';

/**
 * The Files and Batch APIs (OpenAI's shapes): JSONL files of requests uploaded with `purpose: batch`,
 * batches that run every line through the same services as interactive traffic, in a low-priority
 * lane, and write one output or error line per input line. See docs/adr/0012-batch-api.md.
 */

/** Largest batch input file: 200 MB (OpenAI's limit). */
export const BATCH_FILE_MAX_BYTES = 200 * 1024 * 1024;
/** Most request lines in one batch input file (OpenAI's limit). */
export const BATCH_FILE_MAX_LINES = 50_000;
/** Longest `custom_id`. */
export const BATCH_CUSTOM_ID_MAX = 512;
/** Most validation errors listed on a failed batch (the count is always given). */
export const BATCH_MAX_LISTED_ERRORS = 100;

/** Endpoints a batch may target (OpenAI's, minus those this platform does not serve). */
export const BATCH_ENDPOINTS = [
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/embeddings',
  '/v1/responses',
] as const;
export const BatchEndpointSchema = z.enum(BATCH_ENDPOINTS);
export type BatchEndpoint = z.infer<typeof BatchEndpointSchema>;

/** Purposes a client may upload; the platform itself writes `batch_output` files. */
export const FILE_UPLOAD_PURPOSES = ['batch'] as const;
export const FilePurposeSchema = z.enum(['batch', 'batch_output']);
export type FilePurpose = z.infer<typeof FilePurposeSchema>;

export const FileObjectSchema = z
  .object({
    id: z.string(),
    object: z.literal('file'),
    bytes: z.number().int(),
    created_at: z.number().int(),
    /** Unix seconds after which the file is deleted (retention: docs/api-decisions.md). */
    expires_at: z.number().int().nullable(),
    filename: z.string(),
    purpose: FilePurposeSchema,
    /** Always `processed` once the upload returned (deprecated in OpenAI's API, still sent). */
    status: z.literal('processed'),
    status_details: z.string().nullable(),
  })
  .meta({ id: 'FileObject' });
export type FileObject = z.infer<typeof FileObjectSchema>;

export const FileListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(FileObjectSchema),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({ id: 'FileList' });

export const FileDeletedSchema = z
  .object({ id: z.string(), object: z.literal('file'), deleted: z.boolean() })
  .meta({ id: 'FileDeleted' });

/** Query of GET /v1/files (OpenAI's cursor pagination). */
export const FileListQuerySchema = z.object({
  after: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(10_000),
  order: z.enum(['asc', 'desc']).default('desc'),
  purpose: z.string().max(64).optional(),
});

/** Query of GET /v1/batches. */
export const BatchListQuerySchema = z.object({
  after: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export const BatchCreateRequestSchema = z
  .object({
    input_file_id: z.string().min(1).max(128),
    endpoint: BatchEndpointSchema,
    completion_window: z.literal('24h'),
    metadata: MetadataSchema.nullable().optional(),
  })
  .meta({ id: 'CreateBatchRequest' });
export type BatchCreateRequest = z.infer<typeof BatchCreateRequestSchema>;

/** One line of a batch input file. */
export const BatchRequestLineSchema = z.object({
  custom_id: z.string().min(1).max(BATCH_CUSTOM_ID_MAX),
  method: z.literal('POST'),
  url: z.string(),
  body: z.record(z.string(), z.unknown()),
});
export type BatchRequestLine = z.infer<typeof BatchRequestLineSchema>;

/** One line of an output or error file: exactly one per input line. */
export const BatchOutputLineSchema = z
  .object({
    id: z.string(),
    custom_id: z.string(),
    response: z
      .object({ status_code: z.number().int(), request_id: z.string(), body: z.unknown() })
      .nullable(),
    error: z.object({ code: z.string().nullable(), message: z.string() }).nullable(),
  })
  .meta({ id: 'BatchOutputLine' });
export type BatchOutputLine = z.infer<typeof BatchOutputLineSchema>;

export const BATCH_STATUSES = [
  'validating',
  'failed',
  'in_progress',
  'finalizing',
  'completed',
  'expired',
  'cancelling',
  'cancelled',
] as const;
export const BatchStatusSchema = z.enum(BATCH_STATUSES);
export type BatchStatus = z.infer<typeof BatchStatusSchema>;
/** Statuses a batch never leaves. */
export const BATCH_FINAL_STATUSES: readonly BatchStatus[] = ['failed', 'completed', 'expired', 'cancelled'];

/** A validation error of a failed batch: `line` is the 1-based line number of the input file. */
export const BatchErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  param: z.string().nullable(),
  line: z.number().int().nullable(),
});
export type BatchError = z.infer<typeof BatchErrorSchema>;

export const BatchObjectSchema = z
  .object({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: BatchEndpointSchema,
    errors: z.object({ object: z.literal('list'), data: z.array(BatchErrorSchema) }).nullable(),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: BatchStatusSchema,
    output_file_id: z.string().nullable(),
    error_file_id: z.string().nullable(),
    created_at: z.number().int(),
    in_progress_at: z.number().int().nullable(),
    expires_at: z.number().int().nullable(),
    finalizing_at: z.number().int().nullable(),
    completed_at: z.number().int().nullable(),
    failed_at: z.number().int().nullable(),
    expired_at: z.number().int().nullable(),
    cancelling_at: z.number().int().nullable(),
    cancelled_at: z.number().int().nullable(),
    request_counts: z.object({
      total: z.number().int(),
      completed: z.number().int(),
      failed: z.number().int(),
    }),
    metadata: z.record(z.string(), z.string()).nullable(),
  })
  .meta({ id: 'Batch' });
export type BatchObject = z.infer<typeof BatchObjectSchema>;

export const BatchListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(BatchObjectSchema),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({ id: 'BatchList' });

/** The admin API's view of a member's batches: the batch object plus progress. */
export const AdminBatchSchema = BatchObjectSchema.extend({
  member_id: z.string(),
  /** Lines with an output or error line so far / all lines (0..1). */
  progress: z.number(),
}).meta({ id: 'AdminBatch' });
export const AdminBatchListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(AdminBatchSchema),
    /** Pass as `after` for the next page (newest first); null on the last page. */
    next_after: z.string().nullable(),
  })
  .meta({ id: 'AdminBatchList' });
export type AdminBatch = z.infer<typeof AdminBatchSchema>;
export type AdminBatchList = z.infer<typeof AdminBatchListSchema>;

/** The BullMQ job of one batch (queue Queues.batches): the batch id is the job id. */
export const BatchJobDataSchema = z.object({ batchId: z.string() });
export type BatchJobData = z.infer<typeof BatchJobDataSchema>;

/** Usage-event request id of one batch line: the same on every attempt, so the ledger stores it once. */
export function batchLineRequestId(batchId: string, line: number): string {
  return `${batchId}:${line}`;
}
