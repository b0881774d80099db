import { createHash, randomBytes } from 'node:crypto';
import { ACCOUNT_PATH, type OidcConfigView, type OidcErrorCode } from '@infer/contracts';
import {
  AuditRepository,
  type Db,
  MemberSessionsRepository,
  type Operator,
  OperatorSessionsRepository,
  OperatorsRepository,
} from '@infer/persistence/lazy';
import type { Logger } from '@infer/telemetry';
import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import * as oidc from 'openid-client';
import { accountCookie } from '../../account/account-access.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { LOGGER, PRISMA, REDIS } from '../../infra/tokens.js';
import { Admin } from '../access/admin.decorator.js';
import { sessionCookie } from '../access/cookies.js';
import { decideOidcOperator, identityKey } from './oidc-mapping.js';

/** Cookie that ties the browser to its sign-in attempt (state, nonce and PKCE verifier in Redis). */
export const OIDC_COOKIE = 'infer_console_oidc';
const ATTEMPT_TTL_S = 600;
const CONSOLE_PATH = '/console/';
/** Longest wait for the provider (discovery, token endpoint, keys). */
const PROVIDER_TIMEOUT_S = 10;

interface Attempt {
  state: string;
  nonce: string;
  verifier: string;
  /** `member`: a member signing in to the account pages (`/admin/oidc/start?for=member`). */
  for?: 'member';
}

class SignInRefused extends Error {
  constructor(readonly code: OidcErrorCode) {
    super(code);
  }
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const isLoopback = (u: URL) => ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);

/**
 * Single sign-on for the operator console with OpenID Connect (ADR 0010), through `openid-client`:
 * issuer discovery, authorization code flow with PKCE (S256), state and nonce, ID token validation.
 *   GET /admin/oidc            -> {object: 'oidc.config', enabled, provider_name} (for the sign-in page)
 *   GET /admin/oidc/start      -> 302 to the provider (sets the attempt cookie)
 *   GET /admin/oidc/callback   -> 302 to /console/ with a session cookie, or to
 *                                 /console/?sso_error=<code>: never a 500.
 * The session afterwards is the same server-side session as a password sign-in.
 * Members sign in to their account pages through the same relying party and callback
 * (`/admin/oidc/start?for=member`): matched by verified email, never provisioned, their identity linked
 * at the first sign-in; they get a member session (never an operator's) and land on /account/.
 */
@Admin('sign-in')
@Controller('admin/oidc')
export class OidcController {
  private discovered: Promise<oidc.Configuration> | undefined;
  private readonly enabled: boolean;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(PRISMA) private readonly db: Db,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    this.enabled = Boolean(config.CONSOLE_OIDC_ISSUER);
  }

  @Get()
  view(): OidcConfigView {
    return {
      object: 'oidc.config',
      enabled: this.enabled,
      provider_name: this.enabled ? this.config.CONSOLE_OIDC_PROVIDER_NAME : null,
    };
  }

  @Get('start')
  async start(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const member = new URL(req.url, 'http://gateway.invalid').searchParams.get('for') === 'member';
    try {
      if (!this.enabled) throw new SignInRefused('not_configured');
      const provider = await this.provider();
      const attempt: Attempt = {
        state: oidc.randomState(),
        nonce: oidc.randomNonce(),
        verifier: oidc.randomPKCECodeVerifier(),
        ...(member ? { for: 'member' as const } : {}),
      };
      const handle = randomBytes(32).toString('base64url');
      await this.redis.set(this.attemptKey(handle), JSON.stringify(attempt), 'EX', ATTEMPT_TTL_S);
      const url = oidc.buildAuthorizationUrl(provider, {
        redirect_uri: this.config.CONSOLE_OIDC_REDIRECT_URL as string,
        scope: this.config.CONSOLE_OIDC_SCOPES,
        state: attempt.state,
        nonce: attempt.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(attempt.verifier),
        code_challenge_method: 'S256',
      });
      reply
        .code(302)
        .header('cache-control', 'no-store')
        .header('set-cookie', this.attemptCookie(req, handle))
        .header('location', url.href)
        .send();
    } catch (error) {
      this.fail(req, reply, error, member);
    }
  }

  @Get('callback')
  async callback(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    let member = false;
    try {
      if (!this.enabled) throw new SignInRefused('not_configured');
      const query = new URL(req.url, 'http://gateway.invalid').searchParams;
      // The attempt is used once: taken from Redis whatever happens next.
      const handle = parseCookie(req.headers.cookie ?? '')[OIDC_COOKIE];
      const stored = handle ? await this.redis.getdel(this.attemptKey(handle)) : null;
      const attempt = stored ? (JSON.parse(stored) as Attempt) : null;
      member = attempt?.for === 'member';
      if (!attempt || query.get('state') !== attempt.state) throw new SignInRefused('state_mismatch');
      if (query.has('error')) {
        this.log.warn(
          { error: query.get('error')?.slice(0, 100) },
          'the OpenID provider refused the sign-in',
        );
        throw new SignInRefused('provider_error');
      }
      const provider = await this.provider();
      const current = new URL(this.config.CONSOLE_OIDC_REDIRECT_URL as string);
      current.search = query.toString();
      const tokens = await oidc.authorizationCodeGrant(provider, current, {
        pkceCodeVerifier: attempt.verifier,
        expectedState: attempt.state,
        expectedNonce: attempt.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (!idToken) throw new SignInRefused('invalid_response');
      // Providers that keep the email out of the ID token answer it at the userinfo endpoint (the
      // subject must match the ID token's: checked by openid-client).
      let claims: { iss: string; sub: string; email?: unknown; email_verified?: unknown } = idToken;
      if (idToken.email === undefined && tokens.access_token) {
        const info = await oidc.fetchUserInfo(provider, tokens.access_token, idToken.sub);
        claims = { ...idToken, email: info.email, email_verified: info.email_verified };
      }
      const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
      if (member) {
        await this.memberSignIn(req, reply, { ...claims, email });
        return;
      }
      const operators = new OperatorsRepository(this.db);
      const found = email ? await operators.findByEmail(email) : null;
      const identity = {
        issuer: claims.iss,
        subject: claims.sub,
        email: claims.email,
        emailVerified: claims.email_verified,
      };
      const decision = decideOidcOperator(identity, found, {
        allowedDomains: this.config.CONSOLE_OIDC_ALLOWED_DOMAINS.map((d) => d.toLowerCase()),
        autoProvision: this.config.CONSOLE_OIDC_AUTO_PROVISION,
      });
      if (decision.kind === 'refused') {
        this.log.warn({ code: decision.code, issuer: claims.iss }, 'single sign-on refused');
        throw new SignInRefused(decision.code);
      }
      const link = decision.kind === 'provision' || decision.link;
      const opened = await this.db.$transaction(async (tx) => {
        let op: Operator;
        if (decision.kind === 'provision') {
          op = await new OperatorsRepository(tx).create({ email: decision.email, role: 'viewer' });
          await new AuditRepository(tx).append(
            { type: 'operator', id: op.id, label: op.email, ip: req.ip },
            {
              action: 'operator.provision',
              targetType: 'operator',
              targetId: op.id,
              after: { email: op.email, role: op.role, via: 'oidc', issuer: claims.iss },
            },
          );
        } else op = decision.operator;
        if (link)
          op = await tx.operator.update({
            where: { id: op.id },
            data: { oidcSubject: identityKey(identity) },
          });
        const session = await new OperatorSessionsRepository(tx).open(op.id, {
          ip: req.ip,
          userAgent: req.headers['user-agent'],
        });
        await new AuditRepository(tx).append(
          { type: 'operator', id: op.id, label: op.email, ip: req.ip },
          {
            action: 'session.sign_in',
            targetType: 'operator',
            targetId: op.id,
            after: { method: 'oidc', issuer: claims.iss, ...(link ? { linked: true } : {}) },
          },
        );
        return session;
      });
      reply
        .code(302)
        .header('cache-control', 'no-store')
        .header('set-cookie', [
          this.attemptCookie(req, '', true),
          sessionCookie(opened.token, req.protocol === 'https'),
        ])
        .header('location', CONSOLE_PATH)
        .send();
    } catch (error) {
      this.fail(req, reply, error, member);
    }
  }

  /**
   * A member's sign-in: the verified email names the member (no domain list, no provisioning: members
   * exist before they sign in); the first sign-in links the identity, later ones must be the same.
   */
  private async memberSignIn(
    req: FastifyRequest,
    reply: FastifyReply,
    claims: { iss: string; sub: string; email: string; email_verified?: unknown },
  ): Promise<void> {
    if (!claims.email) throw new SignInRefused('email_missing');
    if (claims.email_verified !== true) throw new SignInRefused('email_unverified');
    const sessions = new MemberSessionsRepository(this.db);
    const found = await sessions.findMemberByEmail(claims.email);
    if (!found) throw new SignInRefused('unknown_member');
    if (found.suspendedAt) throw new SignInRefused('member_suspended');
    const identity = identityKey({ issuer: claims.iss, subject: claims.sub });
    if (found.oidcSubject && found.oidcSubject !== identity) throw new SignInRefused('identity_mismatch');
    const actor = { type: 'member' as const, id: found.id, label: found.email ?? found.name, ip: req.ip };
    const opened = await this.db.$transaction(async (tx) => {
      const repo = new MemberSessionsRepository(tx);
      if (!found.oidcSubject) await repo.linkOidc(found.id, identity);
      const session = await repo.open(found.id, { ip: req.ip, userAgent: req.headers['user-agent'] });
      await new AuditRepository(tx).append(actor, {
        action: 'member.sign_in',
        targetType: 'member',
        targetId: found.id,
        after: { method: 'oidc', issuer: claims.iss, ...(found.oidcSubject ? {} : { linked: true }) },
      });
      return session;
    });
    reply
      .code(302)
      .header('cache-control', 'no-store')
      .header('set-cookie', [
        this.attemptCookie(req, '', true),
        accountCookie(opened.token, req.protocol === 'https'),
      ])
      .header('location', ACCOUNT_PATH)
      .send();
  }

  /** The provider's configuration, discovered once (again after a failure). */
  private provider(): Promise<oidc.Configuration> {
    if (!this.discovered) {
      const issuer = new URL(this.config.CONSOLE_OIDC_ISSUER as string);
      this.discovered = oidc
        .discovery(
          issuer,
          this.config.CONSOLE_OIDC_CLIENT_ID as string,
          undefined,
          oidc.ClientSecretBasic(this.config.CONSOLE_OIDC_CLIENT_SECRET),
          {
            timeout: PROVIDER_TIMEOUT_S,
            // Plain HTTP only for a provider on this machine (development, tests).
            ...(issuer.protocol === 'http:' && isLoopback(issuer)
              ? { execute: [oidc.allowInsecureRequests] }
              : {}),
          },
        )
        .then((c) => {
          c.timeout = PROVIDER_TIMEOUT_S;
          return c;
        });
      this.discovered.catch(() => {
        this.discovered = undefined;
      });
    }
    return this.discovered;
  }

  private attemptKey(handle: string): string {
    return `${this.config.CONSOLE_REDIS_PREFIX}oidc:${sha256(handle)}`;
  }

  /**
   * SameSite=Lax, not Strict: the provider sends the browser back with a cross-site top-level GET,
   * and this cookie must come along. It holds only a random handle, scoped to /admin/oidc.
   */
  private attemptCookie(req: FastifyRequest, handle: string, clear = false): string {
    return stringifySetCookie({
      name: OIDC_COOKIE,
      value: handle,
      httpOnly: true,
      sameSite: 'lax',
      secure: req.protocol === 'https',
      path: '/admin/oidc',
      ...(clear ? { expires: new Date(0) } : { maxAge: ATTEMPT_TTL_S }),
    });
  }

  /** Back to the sign-in page with a code the console explains; never a 500. */
  private fail(req: FastifyRequest, reply: FastifyReply, error: unknown, member = false): void {
    const code = errorCode(error);
    if (!(error instanceof SignInRefused)) this.log.warn({ err: error, code }, 'single sign-on failed');
    reply
      .code(302)
      .header('cache-control', 'no-store')
      .header('set-cookie', this.attemptCookie(req, '', true))
      .header('location', `${member ? ACCOUNT_PATH : CONSOLE_PATH}?sso_error=${code}`)
      .send();
  }
}

/** What went wrong, as one of the codes the sign-in page explains. */
export function errorCode(error: unknown): OidcErrorCode {
  if (error instanceof SignInRefused) return error.code;
  if (error instanceof oidc.AuthorizationResponseError) return 'provider_error';
  if (error instanceof oidc.ResponseBodyError) return 'provider_error';
  // fetch() failures (connection refused, DNS, timeout) and a provider answering 5xx/garbage.
  const name = (error as { name?: unknown })?.name;
  const code = (error as { code?: unknown })?.code;
  if (error instanceof TypeError || name === 'TimeoutError' || name === 'AbortError')
    return 'provider_unavailable';
  if (code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || code === 'OAUTH_RESPONSE_IS_NOT_JSON')
    return 'provider_unavailable';
  return 'invalid_response';
}
