import { ApiError } from '@infer/contracts';

/**
 * The 4xx for an error thrown while reading a multipart/form-data body. Everything the iteration over
 * the parts can throw comes from the client's body: busboy's parse errors (no closing boundary, a body
 * cut short, a boundary that never appears, a part without a name), @fastify/multipart's
 * `FST_INVALID_MULTIPART_CONTENT_TYPE` (no boundary parameter) and its limits. ApiErrors pass as they
 * are. Never a 500: the client can fix every one of these.
 */
export function multipartError(
  e: unknown,
  limits: { filesParam?: string; maxFiles?: number } = {},
): ApiError {
  if (e instanceof ApiError) return e;
  const fe = e as { code?: string; message?: string } | null;
  const code = typeof fe?.code === 'string' ? fe.code : '';
  if (code === 'FST_FILES_LIMIT' || code === 'FST_PARTS_LIMIT') {
    return ApiError.invalid(
      `Too many files in the form${limits.maxFiles ? `: send at most ${limits.maxFiles}` : ''}.`,
      limits.filesParam ?? null,
    );
  }
  if (code === 'FST_FIELDS_LIMIT') return ApiError.invalid('Too many fields in the form.');
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE' || /boundary/i.test(fe?.message ?? '')) {
    return ApiError.invalid(
      'The multipart/form-data body could not be read: its Content-Type must carry the boundary that separates the parts, and the body must use it.',
    );
  }
  return ApiError.invalid(
    'The multipart/form-data body could not be read: it is malformed or cut short (every part needs a Content-Disposition with a name, and the body must end with the closing boundary).',
  );
}

/** A part's field name, or a 400 when the part has none (`Content-Disposition: form-data` without `name=`). */
export function partName(fieldname: unknown): string {
  if (typeof fieldname === 'string' && fieldname.length > 0) return fieldname;
  throw ApiError.invalid(
    'A part of the multipart/form-data body has no name: every part needs Content-Disposition: form-data; name="...".',
  );
}
