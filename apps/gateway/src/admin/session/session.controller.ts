import { ApiError, ErrorType, LoginRequestSchema, parseOrThrow, type SessionView } from '@infer/contracts';
import {
  type Db,
  hashPassword,
  OperatorSessionsRepository,
  OperatorsRepository,
  verifyPassword,
} from '@infer/persistence/lazy';
import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { LoginThrottle } from '../../auth/login-throttle.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { PRISMA, REDIS } from '../../infra/tokens.js';
import { Actor, Admin } from '../access/admin.decorator.js';
import { AdminAccess, type AdminActor, sameOrigin } from '../access/admin-access.service.js';
import { clearedSessionCookie, readSessionCookie, sessionCookie } from '../access/cookies.js';
import { operatorView } from '../views.js';

/** Verified against when the email is unknown, so both failures take the same time. */
let dummyHash: Promise<string> | undefined;
function dummy(): Promise<string> {
  if (!dummyHash) dummyHash = hashPassword('not-a-password-at-all');
  return dummyHash;
}

const badCredentials = () =>
  new ApiError(401, 'Wrong email or password.', { type: ErrorType.auth, code: 'invalid_credentials' });

/**
 * Sign-in for the operator console (server-side session in an HttpOnly cookie).
 *   POST   /admin/session {email, password} -> Session (Set-Cookie)
 *   GET    /admin/session                   -> Session of the cookie (401 when none)
 *   DELETE /admin/session                   -> signs out (X-CSRF-Token required)
 */
@Controller('admin/session')
export class SessionController {
  private readonly operators: OperatorsRepository;
  private readonly throttle: LoginThrottle;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(PRISMA) db: Db,
    @Inject(REDIS) redis: Redis,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {
    this.operators = new OperatorsRepository(db);
    this.throttle = new LoginThrottle(redis, config.CONSOLE_REDIS_PREFIX, {
      perAccount: config.CONSOLE_LOGIN_MAX_FAILURES_ACCOUNT,
      perIp: config.CONSOLE_LOGIN_MAX_FAILURES_IP,
      windowS: config.CONSOLE_LOGIN_WINDOW_S,
    });
  }

  private view(op: Parameters<typeof operatorView>[0], csrf: string): SessionView {
    return {
      object: 'session',
      operator: operatorView(op),
      csrf_token: csrf,
      idle_timeout_s: Math.floor(this.config.CONSOLE_SESSION_IDLE_MS / 1000),
    };
  }

  @Admin('sign-in')
  @Post()
  @HttpCode(200)
  async login(
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Body() body: unknown,
  ): Promise<SessionView> {
    if (!sameOrigin(req)) {
      throw new ApiError(403, 'Sign in from the console served by this gateway.', {
        type: ErrorType.permission,
        code: 'csrf_failed',
      });
    }
    const { email, password } = parseOrThrow(LoginRequestSchema, body ?? {});
    const wait = await this.throttle.blockedFor(email, req.ip);
    if (wait > 0) {
      throw new ApiError(429, `Too many failed sign-ins. Try again in ${wait} s.`, {
        type: ErrorType.rateLimit,
        code: 'too_many_sign_ins',
        headers: { 'retry-after': String(wait) },
      });
    }
    const op = await this.operators.findByEmail(email);
    let ok = false;
    if (op?.passwordHash) ok = await verifyPassword(password, op.passwordHash);
    else await verifyPassword(password, await dummy());
    if (!op || !ok || op.disabledAt) {
      await this.throttle.failed(email, req.ip);
      throw badCredentials();
    }
    await this.throttle.succeeded(email);
    const { token, csrfToken } = await this.access.audited(
      { type: 'operator', id: op.id, label: op.email, ip: req.ip },
      (tx) =>
        new OperatorSessionsRepository(tx).open(op.id, { ip: req.ip, userAgent: req.headers['user-agent'] }),
      () => ({
        action: 'session.sign_in',
        targetType: 'operator',
        targetId: op.id,
        after: { method: 'password' },
      }),
    );
    reply.header('set-cookie', sessionCookie(token, req.protocol === 'https'));
    reply.header('cache-control', 'no-store');
    return this.view(op, csrfToken);
  }

  @Admin('sign-in')
  @Get()
  async current(
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionView> {
    const token = readSessionCookie(req.headers.cookie);
    const s = token ? await this.access.sessions.resolve(token, this.config.CONSOLE_SESSION_IDLE_MS) : null;
    if (!s) {
      throw new ApiError(401, 'Not signed in.', { type: ErrorType.auth, code: 'session_expired' });
    }
    reply.header('cache-control', 'no-store');
    return this.view(s.operator, s.csrfToken);
  }

  @Admin('signed-in')
  @Delete()
  @HttpCode(200)
  async logout(
    @Actor() actor: AdminActor,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ object: 'session.deleted' }> {
    const token = readSessionCookie(req.headers.cookie);
    await this.access.audited(
      actor,
      async (tx) => {
        if (token) await new OperatorSessionsRepository(tx).close(token);
      },
      () => ({ action: 'session.sign_out', targetType: 'operator', targetId: actor.id }),
    );
    reply.header('set-cookie', clearedSessionCookie(req.protocol === 'https'));
    return { object: 'session.deleted' };
  }
}
