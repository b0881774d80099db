import { timingSafeEqual } from 'node:crypto';
import {
  type AuditActor,
  type AuditEntry,
  AuditRepository,
  type Db,
  MemberSessionsRepository,
  type Prisma,
} from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { PRISMA } from '../infra/tokens.js';
import { csrfFailed, type MemberActor, readAccountCookie, sameOrigin, signedOut } from './account-access.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function sameToken(a: unknown, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A member's session for the account API (the cookie, CSRF and origin checks) and audited changes. */
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
