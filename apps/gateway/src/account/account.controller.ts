import {
  AcceptInvitationRequestSchema,
  type AccountKey,
  type AccountKeyList,
  AccountLoginRequestSchema,
  type AccountMintedKey,
  type AccountSessionView,
  ApiError,
  ErrorType,
  type InvitationPreview,
  parseOrThrow,
  type SelfUsage,
} from '@infer/contracts';
import {
  type Db,
  hashPassword,
  InvitationError,
  type Member,
  MemberInvitationsRepository,
  MemberSessionsRepository,
  verifyPassword,
} from '@infer/persistence/lazy';
import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { LoginThrottle } from '../auth/login-throttle.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { PRISMA, REDIS } from '../infra/tokens.js';
import { AccountOpen, AccountRoute, CurrentMember } from './account.guard.js';
import { AccountService } from './account.service.js';
import {
  accountCookie,
  clearedAccountCookie,
  csrfFailed,
  type MemberActor,
  readAccountCookie,
  sameOrigin,
  signedOut,
} from './account-access.js';
import { AccountAccess } from './account-access.service.js';

let dummyHash: Promise<string> | undefined;
/** Verified against when the email is unknown, so both failures take the same time. */
const dummy = () => {
  dummyHash ??= hashPassword('not-a-password-at-all');
  return dummyHash;
};

const badCredentials = () =>
  new ApiError(401, 'Wrong email or password.', { type: ErrorType.auth, code: 'invalid_credentials' });

const suspended = () =>
  new ApiError(403, 'Your membership is suspended: you cannot sign in, and your API keys are refused.', {
    type: ErrorType.permission,
    code: 'member_suspended',
  });

function invitationFailure(e: unknown): never {
  if (e instanceof InvitationError) {
    throw new ApiError(e.problem === 'invitation_invalid' ? 404 : 410, e.message, {
      type: ErrorType.invalidRequest,
      code: e.problem,
      param: 'token',
    });
  }
  throw e;
}

/**
 * The members' account pages' API (the page itself is the console's build at /account/):
 *   GET    /account/api/invitation?token=     who an invitation link is for (404/410 when it does not work)
 *   POST   /account/api/invitation            {token, password} sets the password, signs in
 *   POST   /account/api/session               {email, password} signs in (throttled like the console)
 *   GET    /account/api/session               the member of the cookie (401 when none)
 *   DELETE /account/api/session               signs out
 *   GET    /account/api/keys                  the member's keys
 *   POST   /account/api/keys                  {name, expires_in?} a new key, its secret shown this once
 *   POST   /account/api/keys/{id}/rotate      {grace?} a new secret, the old one works for grace (24h)
 *   POST   /account/api/keys/{id}/revoke      refused at once on every gateway
 *   GET    /account/api/usage                 the member's usage and limits (as GET /v1/usage)
 * Every change needs the session's X-CSRF-Token and the gateway's own Origin.
 */
@Controller('account/api')
export class AccountController {
  private readonly throttle: LoginThrottle;
  private readonly sessions: MemberSessionsRepository;
  private readonly invitations: MemberInvitationsRepository;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(PRISMA) db: Db,
    @Inject(REDIS) redis: Redis,
    @Inject(AccountAccess) private readonly access: AccountAccess,
    @Inject(AccountService) private readonly account: AccountService,
  ) {
    this.sessions = new MemberSessionsRepository(db);
    this.invitations = new MemberInvitationsRepository(db);
    // The console's limits, in a namespace of their own (a member and an operator may share an email).
    this.throttle = new LoginThrottle(redis, `${config.CONSOLE_REDIS_PREFIX}member:`, {
      perAccount: config.CONSOLE_LOGIN_MAX_FAILURES_ACCOUNT,
      perIp: config.CONSOLE_LOGIN_MAX_FAILURES_IP,
      windowS: config.CONSOLE_LOGIN_WINDOW_S,
    });
  }

  private view(req: FastifyRequest, m: Member, csrf: string): AccountSessionView {
    const base = this.config.PUBLIC_BASE_URL ?? `${req.protocol}://${req.host}`;
    return {
      object: 'account_session',
      member: this.account.memberView(m),
      csrf_token: csrf,
      idle_timeout_s: Math.floor(this.config.MEMBER_SESSION_IDLE_MS / 1000),
      api_base_url: `${base.replace(/\/+$/, '')}/v1`,
    };
  }

  private async signIn(
    req: FastifyRequest,
    reply: FastifyReply,
    m: Member,
    method: 'password' | 'invitation',
  ): Promise<AccountSessionView> {
    const { token, csrfToken } = await this.access.audited(
      { type: 'member', id: m.id, label: m.email ?? m.name, ip: req.ip },
      (tx) =>
        new MemberSessionsRepository(tx).open(m.id, { ip: req.ip, userAgent: req.headers['user-agent'] }),
      () => ({ action: 'member.sign_in', targetType: 'member', targetId: m.id, after: { method } }),
    );
    reply.header('set-cookie', accountCookie(token, req.protocol === 'https'));
    reply.header('cache-control', 'no-store');
    return this.view(req, m, csrfToken);
  }

  @AccountOpen()
  @Get('invitation')
  async invitation(@Query('token') token: unknown): Promise<InvitationPreview> {
    const { invitation, member } = await this.invitations
      .peek(typeof token === 'string' ? token : '')
      .catch(invitationFailure);
    return {
      object: 'member_invitation.preview',
      name: member.name,
      email: member.email ?? '',
      expires_at: Math.floor(invitation.expiresAt.getTime() / 1000),
    };
  }

  @AccountOpen()
  @Post('invitation')
  @HttpCode(200)
  async accept(
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Body() body: unknown,
  ): Promise<AccountSessionView> {
    if (!sameOrigin(req)) throw csrfFailed();
    const { token, password } = parseOrThrow(AcceptInvitationRequestSchema, body ?? {});
    const { member: before } = await this.invitations.peek(token).catch(invitationFailure);
    if (before.suspendedAt) throw suspended();
    const member = await this.access
      .audited(
        { type: 'member', id: before.id, label: before.email ?? before.name, ip: req.ip },
        (tx) => new MemberInvitationsRepository(tx).redeem(token, password),
        (m) => ({ action: 'member.set_password', targetType: 'member', targetId: m.id }),
      )
      .catch(invitationFailure);
    return this.signIn(req, reply, member, 'invitation');
  }

  @AccountOpen()
  @Post('session')
  @HttpCode(200)
  async login(
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Body() body: unknown,
  ): Promise<AccountSessionView> {
    if (!sameOrigin(req)) throw csrfFailed();
    const { email, password } = parseOrThrow(AccountLoginRequestSchema, body ?? {});
    const wait = await this.throttle.blockedFor(email, req.ip);
    if (wait > 0) {
      throw new ApiError(429, `Too many failed sign-ins. Try again in ${wait} s.`, {
        type: ErrorType.rateLimit,
        code: 'too_many_sign_ins',
        headers: { 'retry-after': String(wait) },
      });
    }
    const m = await this.sessions.findMemberByEmail(email);
    let ok = false;
    if (m?.passwordHash) ok = await verifyPassword(password, m.passwordHash);
    else await verifyPassword(password, await dummy());
    if (!m || !ok) {
      await this.throttle.failed(email, req.ip);
      throw badCredentials();
    }
    if (m.suspendedAt) throw suspended();
    await this.throttle.succeeded(email);
    return this.signIn(req, reply, m, 'password');
  }

  @AccountOpen()
  @Get('session')
  async current(
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<AccountSessionView> {
    const token = readAccountCookie(req.headers.cookie);
    const s = token ? await this.sessions.resolve(token, this.config.MEMBER_SESSION_IDLE_MS) : null;
    if (!s) throw signedOut();
    reply.header('cache-control', 'no-store');
    return this.view(req, s.member, s.csrfToken);
  }

  @AccountRoute()
  @Delete('session')
  @HttpCode(200)
  async logout(
    @CurrentMember() actor: MemberActor,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ object: 'session.deleted' }> {
    const token = readAccountCookie(req.headers.cookie);
    await this.access.audited(
      actor,
      async (tx) => {
        if (token) await new MemberSessionsRepository(tx).close(token);
      },
      () => ({ action: 'member.sign_out', targetType: 'member', targetId: actor.id }),
    );
    reply.header('set-cookie', clearedAccountCookie(req.protocol === 'https'));
    return { object: 'session.deleted' };
  }

  @AccountRoute()
  @Get('keys')
  keys(@CurrentMember() actor: MemberActor): Promise<AccountKeyList> {
    return this.account.list(actor);
  }

  @AccountRoute()
  @Post('keys')
  create(@CurrentMember() actor: MemberActor, @Body() body: unknown): Promise<AccountMintedKey> {
    return this.account.create(actor, body);
  }

  @AccountRoute()
  @Post('keys/:key/rotate')
  rotate(
    @CurrentMember() actor: MemberActor,
    @Param('key') ref: string,
    @Body() body: unknown,
  ): Promise<AccountMintedKey> {
    return this.account.rotate(actor, ref, body);
  }

  @AccountRoute()
  @Post('keys/:key/revoke')
  @HttpCode(200)
  revoke(@CurrentMember() actor: MemberActor, @Param('key') ref: string): Promise<AccountKey> {
    return this.account.revoke(actor, ref);
  }

  @AccountRoute()
  @Get('usage')
  async usage(
    @CurrentMember() actor: MemberActor,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SelfUsage> {
    reply.header('cache-control', 'no-store');
    return this.account.usageOf(actor);
  }
}
