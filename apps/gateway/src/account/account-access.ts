import { timingSafeEqual } from 'node:crypto';
import { ApiError, ErrorType } from '@infer/contracts';
import {
  type AuditActor,
  type AuditEntry,
  AuditRepository,
  type Db,
  MemberSessionsRepository,
  type Prisma,
  type SessionWithMember,
} from '@infer/persistence/lazy';
import {
  applyDecorators,
  type CanActivate,
  createParamDecorator,
  type ExecutionContext,
  Inject,
  Injectable,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyRequest } from 'fastify';
import { IS_PUBLIC } from '../auth/public.decorator.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { PRISMA } from '../infra/tokens.js';

/**
 * Who may use the account pages' API (/account/api/...): a member's session, and nothing else. Its
 * cookie is not the operator console's (another name, Path=/account, its own table): an operator's
 * session is never a member's, a member's never opens /admin (whose guard reads only its own cookie
 * and the admin token), and an API key opens neither.
 */
export const ACCOUNT_COOKIE = 'infer_account_session';
const COOKIE_PATH = '/account';

export function readAccountCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const v = parseCookie(header)[ACCOUNT_COOKIE];
  return v && /^[A-Za-z0-9_-]{20,100}$/.test(v) ? v : undefined;
}

/** HttpOnly, SameSite=Strict, Secure over HTTPS, sent to /account only; a browser-session cookie. */
export function accountCookie(token: string, secure: boolean): string {
  return stringifySetCookie({
    name: ACCOUNT_COOKIE,
    value: token,
    httpOnly: true,
    sameSite: 'strict',
    secure,
    path: COOKIE_PATH,
  });
}

export function clearedAccountCookie(secure: boolean): string {
  return stringifySetCookie({
    name: ACCOUNT_COOKIE,
    value: '',
    httpOnly: true,
    sameSite: 'strict',
    secure,
    path: COOKIE_PATH,
    expires: new Date(0),
  });
}

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

function sameToken(a: unknown, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export const csrfFailed = () =>
  new ApiError(403, 'Missing or wrong X-CSRF-Token: reload the page and try again.', {
    type: ErrorType.permission,
    code: 'csrf_failed',
  });

export const signedOut = () =>
  new ApiError(401, 'Not signed in, or your session has ended. Sign in again.', {
    type: ErrorType.auth,
    code: 'session_expired',
  });

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The member behind a request, for the handlers and the audit log. */
export interface MemberActor extends AuditActor {
  type: 'member';
  id: string;
  session: SessionWithMember;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in member, set by AccountGuard before an account handler runs. */
    memberActor?: import('./account-access.js').MemberActor;
  }
}

@Injectable()
export class AccountAccess {
  readonly sessions: MemberSessionsRepository;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(PRISMA) private readonly db: Db,
  ) {
    this.sessions = new MemberSessionsRepository(db);
  }

  /** The member's live session (401 without one), CSRF and same origin on every change (403). */
  async require(req: FastifyRequest): Promise<MemberActor> {
    const token = readAccountCookie(req.headers.cookie);
    const session = token ? await this.sessions.resolve(token, this.config.MEMBER_SESSION_IDLE_MS) : null;
    if (!session) throw signedOut();
    if (!SAFE_METHODS.has(req.method)) {
      if (!sameOrigin(req) || !sameToken(req.headers['x-csrf-token'], session.csrfToken)) throw csrfFailed();
    }
    const m = session.member;
    return { type: 'member', id: m.id, label: m.email ?? m.name, ip: req.ip, session };
  }

  /** A change and its audit row in one transaction (as the admin room's AdminAccess.audited). */
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
}

@Injectable()
export class AccountGuard implements CanActivate {
  constructor(@Inject(AccountAccess) private readonly access: AccountAccess) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    req.memberActor = await this.access.require(req);
    return true;
  }
}

/**
 * An account route: needs a member's session (AccountGuard); public for the API-key guard (an API key
 * never opens the account pages, and the account's session never calls the API).
 */
export const AccountRoute = () => applyDecorators(SetMetadata(IS_PUBLIC, true), UseGuards(AccountGuard));

/** An account route open without a session (sign-in, the invitation). */
export const AccountOpen = () => SetMetadata(IS_PUBLIC, true);

/** The member AccountGuard admitted. */
export const CurrentMember = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): MemberActor =>
    ctx.switchToHttp().getRequest<FastifyRequest>().memberActor!,
);
