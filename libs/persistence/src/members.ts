import type { Tier } from '@infer/contracts';
import type { DbClient } from './db.js';
import { InvalidInputError, NotFoundError, PersistenceUserError, prismaErrorCode } from './errors.js';
import type { Member, Prisma } from './prisma.js';
import { PrismaSql } from './sql-tag.js';
import { parseTier } from './tiers.js';

const { DbNull } = PrismaSql;

export type { Member };

export interface CreateMemberInput {
  name: string;
  email?: string | null;
  tier: Tier | string;
  /** Start of the member's billing periods; defaults to now. */
  billingPeriodAnchor?: Date;
}

export class MembersRepository {
  constructor(private readonly db: DbClient) {}

  async create(input: CreateMemberInput): Promise<Member> {
    const name = input.name?.trim();
    if (!name) throw new InvalidInputError('member name must not be empty');
    const tier = parseTier(input.tier);
    const email = input.email?.trim() || null;
    if (email && !/^[^\s@]+@[^\s@]+$/.test(email)) throw new InvalidInputError(`invalid email: ${email}`);
    try {
      return await this.db.member.create({
        data: {
          name,
          email,
          tier,
          ...(input.billingPeriodAnchor ? { billingPeriodAnchor: input.billingPeriodAnchor } : {}),
        },
      });
    } catch (error) {
      if (prismaErrorCode(error) === 'P2002')
        throw new PersistenceUserError(`email already in use: ${email}`, 'conflict');
      throw error;
    }
  }

  /** Changes a member's tier; every key of the member follows at once (keys carry no tier). */
  async setTier(id: string, tier: Tier | string): Promise<Member> {
    const parsed = parseTier(tier);
    try {
      return await this.db.member.update({ where: { id }, data: { tier: parsed } });
    } catch (error) {
      if (prismaErrorCode(error) === 'P2025') throw new NotFoundError('member', id);
      throw error;
    }
  }

  get(id: string): Promise<Member | null> {
    return this.db.member.findUnique({ where: { id } });
  }

  /** Like get, but throws NotFoundError. */
  async require(id: string): Promise<Member> {
    const member = await this.get(id);
    if (!member) throw new NotFoundError('member', id);
    return member;
  }

  findByEmail(email: string): Promise<Member | null> {
    return this.db.member.findUnique({ where: { email } });
  }

  list(filter: { tier?: Tier | string } = {}): Promise<Member[]> {
    return this.db.member.findMany({
      where: filter.tier ? { tier: parseTier(filter.tier) } : {},
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
  }

  /**
   * One page of members for the console, keyset-paged on id (uuid v7: creation order), newest
   * first. `q` matches the name or email (case-insensitive substring) or the exact id. Each row
   * carries its key count (one grouped query for the page).
   */
  async search(query: MemberSearch): Promise<{ rows: MemberWithKeyCount[]; nextAfter: string | null }> {
    const q = query.q?.trim();
    const where: Prisma.MemberWhereInput = {
      ...(q
        ? {
            OR: [
              { name: { contains: q, mode: 'insensitive' } },
              { email: { contains: q, mode: 'insensitive' } },
              ...(/^[0-9a-f-]{36}$/i.test(q) ? [{ id: q.toLowerCase() }] : []),
            ],
          }
        : {}),
      ...(query.tier ? { tier: parseTier(query.tier) } : {}),
      ...(query.status === 'suspended' ? { suspendedAt: { not: null } } : {}),
      ...(query.status === 'active' ? { suspendedAt: null } : {}),
      ...(query.after ? { id: { lt: query.after } } : {}),
    };
    const found = await this.db.member.findMany({ where, orderBy: { id: 'desc' }, take: query.limit + 1 });
    const page = found.slice(0, query.limit);
    // Key counts of this page only (one grouped query on the memberId index).
    const counts = page.length
      ? await this.db.apiKey.groupBy({
          by: ['memberId'],
          where: { memberId: { in: page.map((m) => m.id) } },
          _count: { _all: true },
        })
      : [];
    const byMember = new Map(counts.map((c) => [c.memberId, c._count._all]));
    return {
      rows: page.map((m) => ({ ...m, keyCount: byMember.get(m.id) ?? 0 })),
      nextAfter: found.length > query.limit ? (page.at(-1)?.id ?? null) : null,
    };
  }

  /** Sets (or clears, with null: the tier's) the member's own limits (its budget; MemberLimitsSchema). */
  async setLimits(id: string, limits: Record<string, unknown> | null): Promise<Member> {
    try {
      return await this.db.member.update({
        where: { id },
        data: { limits: limits === null ? (DbNull as never) : (limits as Prisma.InputJsonValue) },
      });
    } catch (error) {
      if (prismaErrorCode(error) === 'P2025') throw new NotFoundError('member', id);
      throw error;
    }
  }

  /**
   * Changes tier, billing anchor, suspension and/or body logging; suspended members' keys are refused
   * by auth.
   */
  async update(
    id: string,
    change: { tier?: Tier | string; billingPeriodAnchor?: Date; suspended?: boolean; logBodies?: boolean },
  ): Promise<Member> {
    try {
      return await this.db.member.update({
        where: { id },
        data: {
          ...(change.tier ? { tier: parseTier(change.tier) } : {}),
          ...(change.billingPeriodAnchor ? { billingPeriodAnchor: change.billingPeriodAnchor } : {}),
          ...(change.suspended === undefined ? {} : { suspendedAt: change.suspended ? new Date() : null }),
          ...(change.logBodies === undefined ? {} : { logBodies: change.logBodies }),
        },
      });
    } catch (error) {
      if (prismaErrorCode(error) === 'P2025') throw new NotFoundError('member', id);
      throw error;
    }
  }
}

export interface MemberSearch {
  q?: string;
  tier?: Tier | string;
  status?: 'active' | 'suspended';
  after?: string;
  limit: number;
}

export type MemberWithKeyCount = Member & { keyCount: number };
