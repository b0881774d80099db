import { ApiError, ErrorType } from '@infer/contracts';
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AdminAccess } from './admin-access.service.js';
import { ADMIN_ROUTE, type AdminRouteNeed } from './admin-route.js';
import { readSessionCookie } from './cookies.js';

/**
 * The one check in front of every /admin handler (put there by `@Admin(need)`): the admin token or a
 * console session with the role the route needs, CSRF for mutations (AdminAccess.require). The
 * admitted caller is on `req.adminActor` (the `@Actor()` parameter) for the audit log. A route without
 * `@Admin` is not guarded here: admin-routes.spec.ts makes sure none exists under /admin.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const need = this.reflector.getAllAndOverride<AdminRouteNeed | undefined>(ADMIN_ROUTE, [
      ctx.getHandler(),
      ctx.getClass(),
    ]);
    if (need === undefined || need === 'sign-in') return true;
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    if (need === 'signed-in' && !readSessionCookie(req.headers.cookie)) {
      throw new ApiError(401, 'Not signed in.', { type: ErrorType.auth, code: 'session_expired' });
    }
    req.adminActor = await this.access.require(req, need === 'signed-in' ? 'read' : need);
    return true;
  }
}
