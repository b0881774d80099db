import type { AdminNeed } from './admin-access.service.js';

/**
 * What an /admin route asks of its caller:
 * - `read` / `write` / `owner`: an operator role (viewer reads, admin writes, owner manages operators)
 *   or ADMIN_TOKEN, checked by AdminGuard (admin-access.service.ts);
 * - `signed-in`: `read`, and a console session cookie must be present first (401 session_expired
 *   otherwise: signing out without a session);
 * - `sign-in`: the routes that establish a console session (password, OpenID Connect): nobody is
 *   checked, the handler decides.
 */
export type AdminRouteNeed = AdminNeed | 'signed-in' | 'sign-in';

export const ADMIN_ROUTE = 'infer:admin-route';
