import { ApiError } from '@infer/contracts';
import { isUserError } from '@infer/persistence/lazy';

/**
 * The admin API's answer to a repository's refusal (PersistenceUserError): not_found 404, conflict
 * 409, anything else 400 (invalid_input as invalid_value). Anything else is rethrown as is.
 */
export function userError(error: unknown): never {
  if (isUserError(error)) {
    const status = error.code === 'not_found' ? 404 : error.code === 'conflict' ? 409 : 400;
    throw new ApiError(status, error.message, {
      type: 'invalid_request_error',
      code: error.code === 'invalid_input' ? 'invalid_value' : error.code,
    });
  }
  throw error;
}

/** 404 for an admin path's id that names nothing: `No <what> '<id>'.` with the param it came in. */
export const notFound = (what: string, id: string, param: string) =>
  new ApiError(404, `No ${what} '${id}'.`, { type: 'invalid_request_error', code: 'not_found', param });
