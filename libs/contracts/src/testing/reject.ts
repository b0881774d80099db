import assert from 'node:assert/strict';
import type { z } from 'zod';
import { ApiError } from '../errors.js';
import { parseOrThrow } from '../validate.js';

/** For specs: parses `input`, expects the spec's 400 (invalid_request_error) and returns the error. */
export function reject400(schema: z.ZodType, input: unknown): ApiError {
  try {
    parseOrThrow(schema, input);
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'invalid_request_error');
    return e;
  }
  return assert.fail('expected a 400');
}

/** For specs: the `param` of the 400 that `input` gets. */
export const rejectParam = (schema: z.ZodType, input: unknown): string | null =>
  reject400(schema, input).param;
