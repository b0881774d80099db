import {
  ApiError,
  type BatchEndpoint,
  type BatchError,
  type BatchObject,
  type BatchStatus,
  type FileObject,
  type FilePurpose,
} from '@infer/contracts';
import type { Batch, File } from '@infer/persistence/lazy';
import type { FastifyRequest } from 'fastify';
import type { AuthedKey } from '../auth/key-cache.js';

const secs = (d: Date | null | undefined): number | null => (d ? Math.floor(+d / 1000) : null);

/** A File row as the OpenAI file object. */
export function fileView(f: File): FileObject {
  return {
    id: f.id,
    object: 'file',
    bytes: Number(f.bytes),
    created_at: secs(f.createdAt)!,
    expires_at: secs(f.expiresAt),
    filename: f.filename,
    purpose: f.purpose as FilePurpose,
    status: 'processed',
    status_details: null,
  };
}

/** A Batch row as the OpenAI batch object. */
export function batchView(b: Batch): BatchObject {
  const errors = (b.errors as BatchError[] | null) ?? null;
  return {
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint as BatchEndpoint,
    errors: errors ? { object: 'list', data: errors } : null,
    input_file_id: b.inputFileId,
    completion_window: b.completionWindow,
    status: b.status as BatchStatus,
    output_file_id: b.outputFileId,
    error_file_id: b.errorFileId,
    created_at: secs(b.createdAt)!,
    in_progress_at: secs(b.inProgressAt),
    expires_at: secs(b.expiresAt),
    finalizing_at: secs(b.finalizingAt),
    completed_at: secs(b.completedAt),
    failed_at: secs(b.failedAt),
    expired_at: secs(b.expiredAt),
    cancelling_at: secs(b.cancellingAt),
    cancelled_at: secs(b.cancelledAt),
    request_counts: { total: b.total, completed: b.completed, failed: b.failed },
    metadata: (b.metadata as Record<string, string> | null) ?? null,
  };
}

export function notFound(what: 'file' | 'batch', id: string, param: string | null = null): ApiError {
  return new ApiError(404, `No such ${what === 'file' ? 'File' : 'Batch'} object: ${id.slice(0, 128)}`, {
    type: 'invalid_request_error',
    code: 'not_found',
    param,
  });
}

/** The calling key of a Files/Batch request (the auth guard has set it; a 401 if not). */
export function caller(req: FastifyRequest): AuthedKey {
  if (!req.auth) throw ApiError.invalidKey();
  return req.auth;
}
