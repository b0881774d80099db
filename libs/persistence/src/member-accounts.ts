import { createHash, randomBytes } from 'node:crypto';
import { type DbClient, inTransaction } from './db.js';
import { InvalidInputError, NotFoundError, PersistenceUserError, prismaErrorCode } from './errors.js';
import { hashPassword, passwordProblem } from './passwords.js';
import type { Member } from './prisma.js';

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

/** An invitation token's shape (base64url of 32 random bytes): anything else is not looked up. */
const TOKEN_RE = /^[A-Za-z0-9_-]{40,64}$/;

export interface MemberInvitationInfo {
  id: string;
  memberId: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Why an invitation link does not work (the account page says which). */
export type InvitationProblem = 'invitation_invalid' | 'invitation_expired' | 'invitation_used';

export class InvitationError extends Error {
  constructor(readonly problem: InvitationProblem) {
    super(
      problem === 'invitation_expired'
        ? 'This invitation link has expired: ask an operator for a new one.'
        : problem === 'invitation_used'
          ? 'This invitation link was already used (or replaced by a newer one): ask an operator for a new one.'
          : 'This invitation link is not valid.',
    );
    this.name = 'InvitationError';
  }
}

/**
 * Invitations of members to their account: a one-time link where they set their password (first
 * access, or a reset: a reset is another invitation). The link holds a random 256-bit token; only its
 * sha256 is stored. A new invitation voids the member's earlier unused ones.
 */
export class MemberInvitationsRepository {
  constructor(private readonly db: DbClient) {}

  /**
   * Makes an invitation for `memberId` valid for `ttlMs`. With `email`, it becomes the member's
   * sign-in email (conflict when another member has it); without one the member must already have one.
   */
  async create(
    memberId: string,
    options: { ttlMs: number; email?: string | null | undefined; createdBy: string },
  ): Promise<{ token: string; invitation: MemberInvitationInfo; member: Member }> {
    if (!(options.ttlMs > 0))
      throw new InvalidInputError('the invitation must expire after a positive duration');
    const email = options.email?.trim().toLowerCase() || undefined;
    if (email !== undefined && (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 320))
      throw new InvalidInputError(`invalid email: ${options.email}`);
    const token = randomBytes(32).toString('base64url');
    try {
      return await inTransaction(this.db, async (tx) => {
        const found = await tx.member.findUnique({ where: { id: memberId } });
        if (!found) throw new NotFoundError('member', memberId);
        let member = found;
        if (email !== undefined && email !== found.email?.toLowerCase()) {
          const other = await tx.member.findFirst({
            where: { email: { equals: email, mode: 'insensitive' }, id: { not: memberId } },
            select: { id: true },
          });
          if (other)
            throw new PersistenceUserError(`email already in use by another member: ${email}`, 'conflict');
          member = await tx.member.update({ where: { id: memberId }, data: { email } });
        }
        if (!member.email)
          throw new InvalidInputError('the member has no email to sign in with: give one (--email)');
        const now = new Date();
        await tx.memberInvitation.updateMany({ where: { memberId, usedAt: null }, data: { usedAt: now } });
        const invitation = await tx.memberInvitation.create({
          data: {
            tokenHash: sha256(token),
            memberId,
            expiresAt: new Date(now.getTime() + options.ttlMs),
            createdBy: options.createdBy,
          },
          select: { id: true, memberId: true, createdAt: true, expiresAt: true },
        });
        return { token, invitation, member };
      });
    } catch (error) {
      if (prismaErrorCode(error) === 'P2002')
        throw new PersistenceUserError(`email already in use by another member: ${email}`, 'conflict');
      throw error;
    }
  }

  /** The member an unused, unexpired invitation token is for (throws InvitationError otherwise). */
  async peek(token: string): Promise<{ invitation: MemberInvitationInfo; member: Member }> {
    if (!TOKEN_RE.test(token)) throw new InvitationError('invitation_invalid');
    const inv = await this.db.memberInvitation.findUnique({
      where: { tokenHash: sha256(token) },
      include: { member: true },
    });
    if (!inv) throw new InvitationError('invitation_invalid');
    if (inv.usedAt) throw new InvitationError('invitation_used');
    if (inv.expiresAt.getTime() <= Date.now()) throw new InvitationError('invitation_expired');
    const { member, ...invitation } = inv;
    return {
      invitation: {
        id: invitation.id,
        memberId: invitation.memberId,
        createdAt: invitation.createdAt,
        expiresAt: invitation.expiresAt,
      },
      member,
    };
  }

  /**
   * Uses the invitation: sets the member's password and ends every session they had (a reset signs
   * out everywhere). Exactly once: a concurrent second use finds it used.
   */
  async redeem(token: string, password: string): Promise<Member> {
    const problem = passwordProblem(password);
    if (problem) throw new InvalidInputError(problem);
    const { invitation } = await this.peek(token);
    const hash = await hashPassword(password);
    return inTransaction(this.db, async (tx) => {
      const claimed = await tx.memberInvitation.updateMany({
        where: { id: invitation.id, usedAt: null, expiresAt: { gt: new Date() } },
        data: { usedAt: new Date() },
      });
      if (claimed.count !== 1) throw new InvitationError('invitation_used');
      await tx.memberSession.deleteMany({ where: { memberId: invitation.memberId } });
      return tx.member.update({ where: { id: invitation.memberId }, data: { passwordHash: hash } });
    });
  }
}

export interface SessionWithMember {
  id: string;
  csrfToken: string;
  lastSeenAt: Date;
  member: Member;
}

/**
 * Server-side sessions of members on the account pages: a table of their own (an operator's session
 * is never a member's, nor the other way round). The browser holds a random 256-bit token; the table
 * holds only its sha256.
 */
export class MemberSessionsRepository {
  constructor(private readonly db: DbClient) {}

  /** The member whose sign-in email this is (case-insensitive), or null. */
  findMemberByEmail(email: string): Promise<Member | null> {
    const e = email.trim();
    if (!e) return Promise.resolve(null);
    return this.db.member.findFirst({ where: { email: { equals: e, mode: 'insensitive' } } });
  }

  async open(memberId: string, meta: { ip?: string; userAgent?: string | undefined } = {}) {
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    await inTransaction(this.db, async (tx) => {
      await tx.memberSession.create({
        data: {
          id: sha256(token),
          memberId,
          csrfToken,
          ip: meta.ip ?? null,
          userAgent: meta.userAgent?.slice(0, 512) ?? null,
        },
      });
      await tx.member.update({ where: { id: memberId }, data: { lastLoginAt: new Date() } });
    });
    return { token, csrfToken };
  }

  /**
   * The live session of a cookie token: null when unknown, idle longer than `idleMs`, or its member
   * is suspended (the session is then deleted). Marks it seen at most once per `touchEveryMs`.
   */
  async resolve(token: string, idleMs: number, touchEveryMs = 5_000): Promise<SessionWithMember | null> {
    const id = sha256(token);
    const s = await this.db.memberSession.findUnique({ where: { id }, include: { member: true } });
    if (!s) return null;
    const now = Date.now();
    if (now - +s.lastSeenAt > idleMs || s.member.suspendedAt) {
      await this.db.memberSession.deleteMany({ where: { id } });
      return null;
    }
    if (now - +s.lastSeenAt > touchEveryMs)
      await this.db.memberSession.updateMany({ where: { id }, data: { lastSeenAt: new Date(now) } });
    return { id: s.id, csrfToken: s.csrfToken, lastSeenAt: s.lastSeenAt, member: s.member };
  }

  async close(token: string): Promise<void> {
    await this.db.memberSession.deleteMany({ where: { id: sha256(token) } });
  }

  /** Ends every session of a member (suspension). */
  async closeAll(memberId: string): Promise<number> {
    return (await this.db.memberSession.deleteMany({ where: { memberId } })).count;
  }

  /** Links the member to an OpenID identity (first single sign-on). */
  async linkOidc(memberId: string, subject: string): Promise<Member> {
    return this.db.member.update({ where: { id: memberId }, data: { oidcSubject: subject } });
  }
}
