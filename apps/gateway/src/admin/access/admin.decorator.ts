import {
  applyDecorators,
  createParamDecorator,
  type ExecutionContext,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { IS_PUBLIC } from '../../auth/public.decorator.js';
import { AdminGuard } from './admin.guard.js';
import type { AdminActor } from './admin-access.service.js';
import { ADMIN_ROUTE, type AdminRouteNeed } from './admin-route.js';

export { ADMIN_ROUTE, type AdminRouteNeed };

declare module 'fastify' {
  interface FastifyRequest {
    /** The /admin caller, set by AdminGuard before the handler runs. */
    adminActor?: import('./admin-access.service.js').AdminActor;
  }
}

/**
 * Marks a handler (or a whole controller) as an /admin route and puts it behind AdminGuard. Every
 * route under /admin carries it (admin-routes.spec.ts walks the route table and fails otherwise);
 * it also marks the route public for the API-key guard (auth/auth.guard.ts): API keys never open /admin.
 */
export const Admin = (need: AdminRouteNeed) =>
  applyDecorators(SetMetadata(IS_PUBLIC, true), SetMetadata(ADMIN_ROUTE, need), UseGuards(AdminGuard));

/** The caller AdminGuard admitted (undefined on `sign-in` routes). */
export const Actor = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): AdminActor | undefined =>
    ctx.switchToHttp().getRequest<FastifyRequest>().adminActor,
);
