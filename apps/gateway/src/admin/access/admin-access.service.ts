import { ApiError, ErrorType } from '@infer/contracts';
import {
  type AuditActor,
  type AuditEntry,
  AuditRepository,
  type Db,
  type OperatorRole,
  OperatorSessionsRepository,
  type Prisma,
  type SessionWithOperator,
} from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { PRISMA } from '../../infra/tokens.js';
import { checkAdmin } from './admin-token.js';
import { readSessionCookie, sameToken } from './cookies.js';

/** What a caller of /admin needs: to read, to change the platform, or to manage operators. */
export type AdminNeed = 'read' | 'write' | 'owner';

export interface AdminActor extends AuditActor {
  role: OperatorRole;
  session?: SessionWithOperator;
}

const RANK: Record<OperatorRole, number> = { viewer: 0, admin: 1, owner: 2 };
const NEED_RANK: Record<AdminNeed, number> = { read: 0, write: 1, owner: 2 };
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** True when the request's Origin (if the browser sent one) is the gateway itself. */
export function sameOrigin(req: FastifyRequest): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.host;
  } catch {
    return false;
  }
}

/**
 * Who may use /admin. Two credentials:
 * - `Authorization: Bearer <ADMIN_TOKEN>` (automation, the CLI's HTTP callers): full rights, no CSRF
 *   (a browser never attaches it by itself). Unchanged from before the console.
 * - the console's session cookie: the operator's role decides (viewer reads, admin changes the
 *   platform, owner also manages operators), and every mutation must carry the session's CSRF token
 *   in `X-CSRF-Token` and, when the browser sends an Origin, come from the gateway's own origin.
 * With neither, the answer is as before: 404 when no ADMIN_TOKEN is configured, else 401.
 */
@Injectable()
export class AdminAccess {
  readonly sessions: OperatorSessionsRepository;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(PRISMA) private readonly db: Db,
  ) {
    this.sessions = new OperatorSessionsRepository(db);
  }

  async require(req: FastifyRequest, need: AdminNeed): Promise<AdminActor> {
    const ip = req.ip;
    if (req.headers.authorization) {
      checkAdmin(this.config.ADMIN_TOKEN, req.headers.authorization);
      return { type: 'token', id: null, label: 'admin-token', role: 'owner', ip };
    }
    const token = readSessionCookie(req.headers.cookie);
    if (!token) {
      checkAdmin(this.config.ADMIN_TOKEN, undefined);
      throw new Error('unreachable: checkAdmin throws without a credential');
    }
    const session = await this.sessions.resolve(token, this.config.CONSOLE_SESSION_IDLE_MS);
    if (!session) {
      throw new ApiError(401, 'Your console session has ended. Sign in again.', {
        type: ErrorType.auth,
        code: 'session_expired',
      });
    }
    if (!SAFE_METHODS.has(req.method)) {
      const header = req.headers['x-csrf-token'];
      if (
        !sameOrigin(req) ||
        !sameToken(typeof header === 'string' ? header : undefined, session.csrfToken)
      ) {
        throw new ApiError(403, 'Missing or wrong X-CSRF-Token: reload the console and try again.', {
          type: ErrorType.permission,
          code: 'csrf_failed',
        });
      }
    }
    const role = session.operator.role;
    if (RANK[role] < NEED_RANK[need]) {
      throw new ApiError(
        403,
        need === 'owner'
          ? 'Only an owner can do this.'
          : `The ${role} role can read but not change anything.`,
        { type: ErrorType.permission, code: 'insufficient_role' },
      );
    }
    return {
      type: 'operator',
      id: session.operator.id,
      label: session.operator.email,
      role,
      ip,
      session,
    };
  }

  /**
   * Makes a change and appends its audit entry in ONE PostgreSQL transaction: if the audit insert
   * fails the change is rolled back, and a change that fails leaves no audit row. `change` must do
   * all its database work through `tx`; `entry` describes what it did (null: nothing to audit, e.g.
   * revoking a key that was already revoked).
   */
  audited<T>(
    actor: AuditActor,
    change: (tx: Prisma.TransactionClient) => Promise<T>,
    entry: (result: T) => AuditEntry | null,
  ): Promise<T> {
    return this.db.$transaction(async (tx) => {
      const result = await change(tx);
      const e = entry(result);
      if (e) await new AuditRepository(tx).append(actor, e);
      return result;
    });
  }

  /**
   * Appends one entry to the audit log on behalf of `actor`, on its own: for changes outside
   * PostgreSQL (BullMQ jobs in Redis, the search index), see `auditedOutside`.
   */
  audit(actor: AuditActor, entry: AuditEntry): Promise<void> {
    return new AuditRepository(this.db).append(actor, entry);
  }

  /**
   * A change outside PostgreSQL (Redis, another service) and its audit row: the row is inserted in a
   * transaction that commits only after the change succeeded, so a failed change leaves no row and
   * a failed insert fails the request before the change is made. (Two systems cannot commit
   * atomically: if the commit itself fails after the change, the change stays unaudited, and the
   * request answers 500.)
   */
  auditedOutside<T>(actor: AuditActor, entry: AuditEntry, change: () => Promise<T>): Promise<T> {
    return this.db.$transaction(async (tx) => {
      await new AuditRepository(tx).append(actor, entry);
      return change();
    });
  }
}
