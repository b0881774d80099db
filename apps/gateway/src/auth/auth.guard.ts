import { ApiError, ErrorType } from '@infer/contracts';
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { type AuthedKey, hashKey, KeyCache } from './key-cache.js';
import { IS_PUBLIC } from './public.decorator.js';
import { bearerChallenge, unauthorized } from './www-authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth?: import('./key-cache.js').AuthedKey;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Key auth on every route not marked @Public(): `Authorization: Bearer <key>`, or `x-api-key: <key>` (the
 * header of Anthropic's clients) when there is no Authorization header; 401 invalid_api_key when
 * missing or unknown.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  /** @Public() of each handler (on it or its class), read once per handler rather than per request. */
  private readonly publicOf = new WeakMap<object, { cls: object; pub: boolean }>();

  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(KeyCache) private readonly keys: KeyCache,
  ) {}

  /**
   * Synchronous when the key is in the cache (Nest then awaits nothing for this guard); a promise only
   * when the store must be asked.
   */
  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    if (this.isPublic(ctx)) return true;
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    const auth = authenticate(req, this.keys);
    if (auth instanceof Promise) {
      return auth.then((found) => {
        req.auth = found;
        return true;
      });
    }
    req.auth = auth;
    return true;
  }

  private isPublic(ctx: ExecutionContext): boolean {
    const handler = ctx.getHandler();
    const cls = ctx.getClass();
    const known = this.publicOf.get(handler);
    if (known !== undefined && known.cls === cls) return known.pub;
    const pub = Boolean(
      this.reflector.get<boolean>(IS_PUBLIC, handler) || this.reflector.get<boolean>(IS_PUBLIC, cls),
    );
    this.publicOf.set(handler, { cls, pub });
    return pub;
  }
}

/**
 * The caller's key (401 when missing, malformed or unknown). Returns the key itself when the cache
 * answers (no promise per request), a promise when the store is asked; a bad header throws at once.
 */
export function authenticate(req: FastifyRequest, keys: KeyCache): AuthedKey | Promise<AuthedKey> {
  // Every 401 here carries a WWW-Authenticate Bearer challenge (RFC 6750): keys are bearer tokens.
  const header = req.headers.authorization;
  if (!header) {
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey === 'string' && apiKey.length > 0) return lookup(req, keys, apiKey.trim());
    throw unauthorized(
      'Missing API key. Pass it as "Authorization: Bearer <key>" (or "x-api-key: <key>").',
      'An API key is required; send it as Authorization: Bearer <key>.',
    );
  }
  const m = BEARER.exec(header);
  if (!m?.[1]) {
    throw unauthorized(
      'Malformed Authorization header. Use "Authorization: Bearer <key>".',
      'The Authorization header must be Bearer <key>.',
      'invalid_request',
    );
  }
  return lookup(req, keys, m[1]);
}

function lookup(req: FastifyRequest, keys: KeyCache, key: string): AuthedKey | Promise<AuthedKey> {
  const hash = hashKey(key);
  const hit = keys.cached(hash);
  // The client address only when the store is asked (it meters invalid-key floods there).
  return hit !== undefined
    ? admit(hit, req)
    : keys.lookupHash(hash, req.ip).then((found) => admit(found, req));
}

/**
 * The key's own rules, from what the cache holds: its expiry (or an old secret's grace end), then its
 * IP allow-list against the client address Fastify derived through TRUSTED_PROXIES. The model
 * allow-list is checked where the model is resolved (Catalog.resolve).
 */
function admit(found: AuthedKey | null, req: FastifyRequest): AuthedKey {
  if (!found) {
    throw unauthorized('Incorrect API key provided.', 'The API key is unknown or revoked.', 'invalid_token');
  }
  if (Date.now() >= found.notAfter) throw lapsed(found);
  if (found.ipAllowed !== null && !found.ipAllowed(req.ip)) throw ipNotAllowed(req.ip);
  return found;
}

function lapsed(found: AuthedKey): ApiError {
  const e =
    found.notAfter === found.expiresAt
      ? new ApiError(401, `This API key expired at ${new Date(found.expiresAt).toISOString()}.`, {
          type: ErrorType.auth,
          code: 'key_expired',
        })
      : ApiError.invalidKey(
          `This API key secret was replaced by a rotation and stopped working at ${new Date(found.notAfter).toISOString()}; use the new secret.`,
        );
  return new ApiError(e.status, e.message, {
    type: e.type,
    code: e.code,
    param: e.param,
    headers: { 'www-authenticate': bearerChallenge(e.message, 'invalid_token') },
  });
}

function ipNotAllowed(ip: string | undefined): ApiError {
  return new ApiError(403, `This API key cannot be used from your address (${ip ?? 'unknown'}).`, {
    type: ErrorType.permission,
    code: 'ip_not_allowed',
  });
}
