import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { KeyCache } from './key-cache.js';
import { IS_PUBLIC } from './public.decorator.js';
import { unauthorized } from './www-authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth?: import('./key-cache.js').AuthedKey;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** Bearer-key auth on every route not marked @Public(): 401 invalid_api_key when missing or unknown. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(KeyCache) private readonly keys: KeyCache,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (
      this.reflector.get<boolean>(IS_PUBLIC, ctx.getHandler()) ||
      this.reflector.get<boolean>(IS_PUBLIC, ctx.getClass())
    ) {
      return true;
    }
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    req.auth = await authenticate(req, this.keys);
    return true;
  }
}

export async function authenticate(req: FastifyRequest, keys: KeyCache) {
  // Every 401 here carries a WWW-Authenticate Bearer challenge (RFC 6750): keys are bearer tokens.
  const header = req.headers.authorization;
  if (!header) {
    throw unauthorized(
      'Missing API key. Pass it as "Authorization: Bearer <key>".',
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
  const found = await keys.lookup(m[1], req.ip);
  if (!found) {
    throw unauthorized('Incorrect API key provided.', 'The API key is unknown or revoked.', 'invalid_token');
  }
  return found;
}
