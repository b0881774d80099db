import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError, ErrorType } from '@infer/contracts';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The /admin credential check. With no ADMIN_TOKEN configured the admin routes do not exist (404, as
 * any unknown URL). Otherwise `Authorization: Bearer <ADMIN_TOKEN>` is required, compared in constant
 * time (both sides hashed first, so even the length does not leak); API keys are not accepted.
 */
export function checkAdmin(adminToken: string | undefined, authorization: string | undefined): void {
  if (!adminToken) {
    throw new ApiError(404, 'Unknown request URL. See /openapi.json for the routes this API serves.', {
      type: ErrorType.invalidRequest,
      code: 'unknown_url',
    });
  }
  const given = authorization ? BEARER.exec(authorization)?.[1] : undefined;
  if (!given || !timingSafeEqual(digest(given), digest(adminToken))) {
    throw new ApiError(401, 'The admin API needs "Authorization: Bearer <ADMIN_TOKEN>".', {
      type: ErrorType.invalidRequest,
      code: 'invalid_admin_token',
    });
  }
}
