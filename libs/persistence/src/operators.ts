import { createHash, randomBytes } from 'node:crypto';
import { type DbClient, inTransaction } from './db.js';
import { InvalidInputError, NotFoundError, PersistenceUserError, prismaErrorCode } from './errors.js';
import type { OperatorRole } from './generated/prisma/enums.js';
import { hashPassword, passwordProblem } from './passwords.js';
import type { Operator } from './prisma.js';

export type { Operator, OperatorRole };
export const OPERATOR_ROLES = ['owner', 'admin', 'viewer'] as const satisfies readonly OperatorRole[];

export function parseOperatorRole(role: string): OperatorRole {
  if ((OPERATOR_ROLES as readonly string[]).includes(role)) return role as OperatorRole;
  throw new InvalidInputError(`unknown role '${role}' (one of ${OPERATOR_ROLES.join(', ')})`);
}

export function normalizeEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(e) || e.length > 320) throw new InvalidInputError(`invalid email: ${email}`);
  return e;
}

export interface CreateOperatorInput {
  email: string;
  role: OperatorRole | string;
  /** Omit for an operator who signs in only through single sign-on. */
  password?: string;
}

/** The operators' accounts (operator console). */
export class OperatorsRepository {
  constructor(private readonly db: DbClient) {}

  async create(input: CreateOperatorInput): Promise<Operator> {
    const email = normalizeEmail(input.email);
    const role = parseOperatorRole(input.role);
    let passwordHash: string | null = null;
    if (input.password !== undefined) {
      const problem = passwordProblem(input.password);
      if (problem) throw new InvalidInputError(problem);
      passwordHash = await hashPassword(input.password);
    }
    try {
      return await this.db.operator.create({ data: { email, role, passwordHash } });
    } catch (error) {
      if (prismaErrorCode(error) === 'P2002')
        throw new PersistenceUserError(`an operator with email ${email} already exists`, 'conflict');
      throw error;
    }
  }

  get(id: string): Promise<Operator | null> {
    return this.db.operator.findUnique({ where: { id } });
  }

  async require(id: string): Promise<Operator> {
    const op = await this.get(id);
    if (!op) throw new NotFoundError('operator', id);
    return op;
  }

  findByEmail(email: string): Promise<Operator | null> {
    return this.db.operator.findUnique({ where: { email: email.trim().toLowerCase() } });
  }

  list(): Promise<Operator[]> {
    return this.db.operator.findMany({ orderBy: { createdAt: 'asc' } });
  }

  /** Active owners other than `exceptId`: the last owner may not be demoted or disabled. */
  countActiveOwners(exceptId?: string): Promise<number> {
    return this.db.operator.count({
      where: { role: 'owner', disabledAt: null, ...(exceptId ? { id: { not: exceptId } } : {}) },
    });
  }

  /** Changes role and/or disabled state; disabling ends every session of the operator. */
  async update(id: string, change: { role?: OperatorRole; disabled?: boolean }): Promise<Operator> {
    try {
      return await inTransaction(this.db, async (tx) => {
        const op = await tx.operator.update({
          where: { id },
          data: {
            ...(change.role ? { role: change.role } : {}),
            ...(change.disabled === undefined ? {} : { disabledAt: change.disabled ? new Date() : null }),
          },
        });
        if (change.disabled) await tx.operatorSession.deleteMany({ where: { operatorId: id } });
        return op;
      });
    } catch (error) {
      if (prismaErrorCode(error) === 'P2025') throw new NotFoundError('operator', id);
      throw error;
    }
  }

  async setPassword(id: string, password: string): Promise<void> {
    const problem = passwordProblem(password);
    if (problem) throw new InvalidInputError(problem);
    await this.db.operator.update({ where: { id }, data: { passwordHash: await hashPassword(password) } });
  }
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export interface SessionWithOperator {
  id: string;
  csrfToken: string;
  lastSeenAt: Date;
  operator: Operator;
}

/**
 * Server-side sessions of the operator console. The browser holds a random 256-bit token in a
 * cookie; the table holds only its sha256, so a read of the table cannot be replayed as a cookie.
 */
export class OperatorSessionsRepository {
  constructor(private readonly db: DbClient) {}

  /** Opens a session; returns the cookie token and the CSRF token. */
  async open(operatorId: string, meta: { ip?: string; userAgent?: string } = {}) {
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    await inTransaction(this.db, async (tx) => {
      await tx.operatorSession.create({
        data: {
          id: sha256(token),
          operatorId,
          csrfToken,
          ip: meta.ip ?? null,
          userAgent: meta.userAgent?.slice(0, 512) ?? null,
        },
      });
      await tx.operator.update({ where: { id: operatorId }, data: { lastLoginAt: new Date() } });
    });
    return { token, csrfToken };
  }

  /**
   * The live session of a cookie token: null when unknown, idle longer than `idleMs`, or its operator
   * is disabled (an expired session is deleted). Marks it seen (at most once per `touchEveryMs`).
   */
  async resolve(token: string, idleMs: number, touchEveryMs = 5_000): Promise<SessionWithOperator | null> {
    const id = sha256(token);
    const s = await this.db.operatorSession.findUnique({ where: { id }, include: { operator: true } });
    if (!s) return null;
    const now = Date.now();
    if (now - +s.lastSeenAt > idleMs || s.operator.disabledAt) {
      await this.db.operatorSession.deleteMany({ where: { id } });
      return null;
    }
    if (now - +s.lastSeenAt > touchEveryMs)
      await this.db.operatorSession.updateMany({ where: { id }, data: { lastSeenAt: new Date(now) } });
    return { id: s.id, csrfToken: s.csrfToken, lastSeenAt: s.lastSeenAt, operator: s.operator };
  }

  async close(token: string): Promise<void> {
    await this.db.operatorSession.deleteMany({ where: { id: sha256(token) } });
  }

  /** Deletes sessions idle longer than `idleMs`; returns how many. */
  async sweep(idleMs: number): Promise<number> {
    const r = await this.db.operatorSession.deleteMany({
      where: { lastSeenAt: { lt: new Date(Date.now() - idleMs) } },
    });
    return r.count;
  }
}
