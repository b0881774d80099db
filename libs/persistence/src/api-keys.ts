import { createHash, randomBytes } from 'node:crypto';
import type { Tier } from '@infer/contracts';
import type { DbClient } from './db.js';
import { InvalidInputError, NotFoundError, prismaErrorCode } from './errors.js';
import type { Prisma } from './prisma.js';
import { findActiveKeyByHash, prismaRunner, touchKeyLastUsed } from './queries.js';
import { PrismaSql } from './sql-tag.js';

const { DbNull } = PrismaSql;

/** Every key starts with this. */
export const API_KEY_PREFIX = 'sk-inf-';
/** Random base62 characters after the prefix (40 chars: ~238 bits). */
export const API_KEY_RANDOM_LENGTH = 40;
/** Characters of the key kept for display: `sk-inf-` + 6 = `sk-inf-abc123`. */
export const API_KEY_DISPLAY_LENGTH = API_KEY_PREFIX.length + 6;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RE = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${API_KEY_RANDOM_LENGTH}}$`);

/** sha256 hex of the full key: what is stored and looked up. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Whether a string has the shape of one of our keys (cheap check before any lookup). */
export function isApiKeyFormat(key: string): boolean {
  return KEY_RE.test(key);
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A new key: `sk-inf-` + 40 base62 chars from crypto.randomBytes, its display prefix and its hash. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = API_KEY_PREFIX + randomBase62(API_KEY_RANDOM_LENGTH);
  return { key, prefix: key.slice(0, API_KEY_DISPLAY_LENGTH), hash: hashApiKey(key) };
}

/** A key as shown to operators: never the key, never its hash. */
export interface ApiKeyInfo {
  id: string;
  memberId: string;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  limits: unknown;
  expiresAt: Date | null;
  allowedModels: string[];
  allowedIps: string[];
  rotatedAt: Date | null;
  /** The latest older secrets, grace ending last first ("old secret valid until T" while in the future). */
  oldSecrets: { prefix: string; graceUntil: Date }[];
}

/** What mint() and update() may set on a key's lifecycle. */
export interface KeyLifecycle {
  /** null clears it (never expires). */
  expiresAt?: Date | null;
  allowedModels?: string[];
  allowedIps?: string[];
}

function lifecycleData(l: KeyLifecycle): {
  expiresAt?: Date | null;
  allowedModels?: string[];
  allowedIps?: string[];
} {
  return {
    ...(l.expiresAt !== undefined ? { expiresAt: l.expiresAt } : {}),
    ...(l.allowedModels !== undefined ? { allowedModels: [...new Set(l.allowedModels)] } : {}),
    ...(l.allowedIps !== undefined ? { allowedIps: [...new Set(l.allowedIps)] } : {}),
  };
}

/** Members matched by a key search before it switches to a relation filter (see search()). */
const MEMBER_MATCHES = 2000;

export interface ApiKeyWithMember extends ApiKeyInfo {
  member: { id: string; name: string; tier: Tier; suspendedAt: Date | null };
}

export interface KeySearch {
  q?: string | undefined;
  memberId?: string | undefined;
  status?: 'active' | 'revoked' | undefined;
  after?: string | undefined;
  limit: number;
}

/** What the gateway's auth needs about a key, read in one query. */
export interface AuthKey {
  keyId: string;
  memberId: string;
  tier: Tier;
  name: string;
  prefix: string;
  revoked: boolean;
  /** Per-key limit overrides (null: the defaults). */
  limits: unknown;
  /** The member's own limits (Member.limits: its budget; null: its tier's). */
  memberLimits?: unknown;
  /** Start of the member's billing periods (chat-G's allowance period). */
  billingPeriodAnchor: Date;
  lastUsedAt: Date | null;
  /** After this the key answers 401 key_expired (null: never). */
  expiresAt: Date | null;
  /** Model ids the key may call (empty: all its tier reaches). */
  allowedModels: string[];
  /** CIDR blocks the key may be used from (empty: anywhere). */
  allowedIps: string[];
  /** Set when the presented secret is an old one kept by a rotation: it works until then. */
  graceUntil: Date | null;
  /** The member's body-logging switch (docs/adr/0110-request-log.md). */
  logBodies: boolean;
}

const INFO_SELECT = {
  id: true,
  memberId: true,
  name: true,
  prefix: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
  limits: true,
  expiresAt: true,
  allowedModels: true,
  allowedIps: true,
  rotatedAt: true,
  // The latest few: views show those whose grace has not ended (keyView), whatever the history.
  oldSecrets: {
    select: { prefix: true, graceUntil: true },
    orderBy: { graceUntil: 'desc' as const },
    take: 3,
  },
} satisfies Prisma.ApiKeySelect;

export class ApiKeysRepository {
  constructor(private readonly db: DbClient) {}

  /**
   * Creates a key for a member. The plaintext `key` is returned here only: just its hash is stored.
   */
  async mint(
    memberId: string,
    name = 'default',
    options: { limits?: Record<string, unknown> } & KeyLifecycle = {},
  ): Promise<{ key: string; record: ApiKeyInfo }> {
    const keyName = name.trim();
    if (!keyName) throw new InvalidInputError('key name must not be empty');
    const member = await this.db.member.findUnique({ where: { id: memberId }, select: { id: true } });
    if (!member) throw new NotFoundError('member', memberId);
    for (let attempt = 0; ; attempt++) {
      const { key, prefix, hash } = generateApiKey();
      try {
        const record = await this.db.apiKey.create({
          data: {
            memberId,
            name: keyName,
            prefix,
            hash,
            ...(options.limits ? { limits: options.limits as Prisma.InputJsonValue } : {}),
            ...lifecycleData(options),
          },
          select: INFO_SELECT,
        });
        return { key, record };
      } catch (error) {
        // A display prefix already taken (1 in 57 billion per existing key): draw again.
        if (prismaErrorCode(error) === 'P2002' && attempt < 5) continue;
        if (prismaErrorCode(error) === 'P2003') throw new NotFoundError('member', memberId);
        throw error;
      }
    }
  }

  /** Keys, oldest first, revoked ones included; all members' keys when memberId is omitted. */
  list(memberId?: string): Promise<ApiKeyInfo[]> {
    return this.db.apiKey.findMany({
      where: memberId ? { memberId } : {},
      select: INFO_SELECT,
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
  }

  /**
   * One page of keys across members, newest first (keyset paging on the id: uuid v7, time-ordered),
   * with their member. `q` matches the key's name, display prefix or id, or its member's name or
   * email (case-insensitive).
   */
  async search(query: KeySearch): Promise<{ rows: ApiKeyWithMember[]; nextAfter: string | null }> {
    const q = query.q?.trim();
    let match: Prisma.ApiKeyWhereInput[] = [];
    if (q) {
      // Members matching first, in one query: a relation filter inside the OR would be checked
      // once per key scanned (50,000 sub-queries for a rare match). Beyond MEMBER_MATCHES members
      // the matches are dense, and the relation filter finds a page quickly.
      const members = await this.db.member.findMany({
        where: {
          OR: [
            { name: { contains: q, mode: 'insensitive' } },
            { email: { contains: q, mode: 'insensitive' } },
          ],
        },
        select: { id: true },
        take: MEMBER_MATCHES + 1,
      });
      const byMember: Prisma.ApiKeyWhereInput[] =
        members.length > MEMBER_MATCHES
          ? [
              { member: { name: { contains: q, mode: 'insensitive' } } },
              { member: { email: { contains: q, mode: 'insensitive' } } },
            ]
          : members.length
            ? [{ memberId: { in: members.map((m) => m.id) } }]
            : [];
      match = [
        { name: { contains: q, mode: 'insensitive' } },
        { prefix: { startsWith: q } },
        ...(/^[0-9a-f-]{36}$/i.test(q) ? [{ id: q.toLowerCase() }, { memberId: q.toLowerCase() }] : []),
        ...byMember,
      ];
    }
    const where: Prisma.ApiKeyWhereInput = {
      ...(match.length ? { OR: match } : {}),
      ...(query.memberId ? { memberId: query.memberId } : {}),
      ...(query.status === 'active' ? { revokedAt: null } : {}),
      ...(query.status === 'revoked' ? { revokedAt: { not: null } } : {}),
      ...(query.after ? { id: { lt: query.after } } : {}),
    };
    const found = await this.db.apiKey.findMany({
      where,
      orderBy: { id: 'desc' },
      take: query.limit + 1,
      select: {
        ...INFO_SELECT,
        member: { select: { id: true, name: true, tier: true, suspendedAt: true } },
      },
    });
    const page = found.slice(0, query.limit);
    return { rows: page, nextAfter: found.length > query.limit ? (page.at(-1)?.id ?? null) : null };
  }

  /** The key with this id, or this display prefix (`sk-inf-abc123`). */
  async find(idOrPrefix: string): Promise<ApiKeyInfo | null> {
    const where = idOrPrefix.startsWith(API_KEY_PREFIX) ? { prefix: idOrPrefix } : { id: idOrPrefix };
    return this.db.apiKey.findUnique({ where, select: INFO_SELECT });
  }

  /** Revokes a key by id or display prefix. Revoking twice keeps the first revocation time. */
  async revoke(idOrPrefix: string): Promise<ApiKeyInfo> {
    const found = await this.find(idOrPrefix.trim());
    if (!found) throw new NotFoundError('key', idOrPrefix);
    if (found.revokedAt) return found;
    await this.db.apiKey.updateMany({
      where: { id: found.id, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    return (await this.db.apiKey.findUnique({ where: { id: found.id }, select: INFO_SELECT }))!;
  }

  /**
   * The auth hot path: key and member in ONE query, by the sha256 hex of the presented key.
   * Returns null for an unknown hash and, unless includeRevoked, for a revoked key or a key of a
   * suspended member.
   */
  findActiveByHash(hash: string, options: { includeRevoked?: boolean } = {}): Promise<AuthKey | null> {
    return findActiveKeyByHash(prismaRunner(this.db), hash, options);
  }

  /** findActiveByHash(hashApiKey(key)). */
  findActiveByKey(key: string, options: { includeRevoked?: boolean } = {}): Promise<AuthKey | null> {
    return this.findActiveByHash(hashApiKey(key), options);
  }

  /**
   * Records that a key was used. Writes at most once per `minIntervalMs` per key (default 60 s), so
   * calling it on every request costs one cheap UPDATE that usually matches nothing.
   * Returns true when the row was updated.
   */
  touchLastUsed(keyId: string, at: Date = new Date(), minIntervalMs = 60_000): Promise<boolean> {
    return touchKeyLastUsed(prismaRunner(this.db), keyId, at, minIntervalMs);
  }

  /**
   * Rotation: a new secret for the same key (same id, name, limits and lifecycle). The old secret keeps
   * working until now + graceMs (0: it stops at once), then answers like an unknown key. The new secret
   * is returned here only. A revoked key cannot be rotated (InvalidInputError).
   */
  async rotate(
    idOrPrefix: string,
    graceMs: number,
    now = new Date(),
  ): Promise<{ key: string; record: ApiKeyInfo }> {
    const found = await this.db.apiKey.findUnique({
      where: idOrPrefix.startsWith(API_KEY_PREFIX) ? { prefix: idOrPrefix } : { id: idOrPrefix },
      select: { id: true, hash: true, prefix: true, createdAt: true, rotatedAt: true, revokedAt: true },
    });
    if (!found) throw new NotFoundError('key', idOrPrefix);
    if (found.revokedAt) throw new InvalidInputError('a revoked key cannot be rotated; mint a new one');
    for (let attempt = 0; ; attempt++) {
      const { key, prefix, hash } = generateApiKey();
      try {
        // Compare-and-set on the hash: a concurrent rotation makes this one fail, never lose a secret.
        const updated = await this.db.apiKey.updateMany({
          where: { id: found.id, hash: found.hash, revokedAt: null },
          data: { hash, prefix, rotatedAt: now },
        });
        if (updated.count !== 1) throw new InvalidInputError('the key changed during the rotation; retry');
        // Then the old secret's grace. Should this fail, the old secret simply stopped at once.
        await this.db.apiKeySecret.create({
          data: {
            keyId: found.id,
            hash: found.hash,
            prefix: found.prefix,
            createdAt: found.rotatedAt ?? found.createdAt,
            rotatedAt: now,
            graceUntil: new Date(now.getTime() + Math.max(0, graceMs)),
          },
        });
        const record = await this.db.apiKey.findUnique({ where: { id: found.id }, select: INFO_SELECT });
        return { key, record: record! };
      } catch (error) {
        // A display prefix already taken: draw again (inside a transaction the caller retries).
        if (prismaErrorCode(error) === 'P2002' && attempt < 5) continue;
        throw error;
      }
    }
  }

  /** Changes a key's expiry, model allow-list and/or IP allow-list (what is omitted stays). */
  async updateLifecycle(idOrPrefix: string, change: KeyLifecycle): Promise<ApiKeyInfo> {
    const found = await this.find(idOrPrefix);
    if (!found) throw new NotFoundError('key', idOrPrefix);
    return this.db.apiKey.update({
      where: { id: found.id },
      data: lifecycleData(change),
      select: INFO_SELECT,
    });
  }

  /**
   * Keys with an expiry, expiring soonest first (revoked ones left out), keyset-paged on
   * (expiresAt, id): `after` is the previous page's last `${expiresAt ISO}|${id}`.
   */
  async expiringSoonest(query: { memberId?: string; after?: string; limit: number }) {
    const [at, id] = query.after?.split('|') ?? [];
    const afterAt = at ? new Date(at) : null;
    if (afterAt && Number.isNaN(afterAt.getTime())) throw new InvalidInputError('invalid cursor');
    const where: Prisma.ApiKeyWhereInput = {
      expiresAt: { not: null },
      revokedAt: null,
      ...(query.memberId ? { memberId: query.memberId } : {}),
      ...(afterAt && id
        ? { OR: [{ expiresAt: { gt: afterAt } }, { expiresAt: afterAt, id: { gt: id } }] }
        : {}),
    };
    const found = await this.db.apiKey.findMany({
      where,
      orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
      take: query.limit + 1,
      select: { ...INFO_SELECT, member: { select: { id: true, name: true, tier: true, suspendedAt: true } } },
    });
    const page = found.slice(0, query.limit);
    const last = page.at(-1);
    return {
      rows: page as ApiKeyWithMember[],
      nextAfter: found.length > query.limit && last ? `${last.expiresAt?.toISOString()}|${last.id}` : null,
    };
  }

  /** Sets (or clears, with null) a key's limit overrides. */
  async setLimits(idOrPrefix: string, limits: Record<string, unknown> | null): Promise<ApiKeyInfo> {
    const found = await this.find(idOrPrefix);
    if (!found) throw new NotFoundError('key', idOrPrefix);
    return this.db.apiKey.update({
      where: { id: found.id },
      data: { limits: limits === null ? DbNull : (limits as Prisma.InputJsonValue) },
      select: INFO_SELECT,
    });
  }
}
