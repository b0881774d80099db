// The statements the gateway runs at start-up, on a key-cache miss and from its limits: written once
// as parameterised SQL (the catalog's: catalog.ts listEnabledModels; the limits': usage-report.ts usageTotal), run either on pg directly (a pg Pool or Client: the gateway, which does not load
// Prisma's client until a route needs it, ADR 0014) or through Prisma's client (`prismaRunner`: the
// repositories, e.g. ApiKeysRepository.findActiveByHash, CatalogRepository.listEnabled). The two
// drivers type some columns differently (bigint: a string from pg, a BigInt from Prisma); each mapping
// below reads both the same way, and the specs check that both give the same results.
import type { Tier } from '@infer/contracts';
import type { AuthKey } from './api-keys.js';
import type { DbClient } from './db.js';
import type { SqlRunner } from './usage-partitions.js';

/** Prisma's client (or a transaction's) as a SqlRunner: `$queryRawUnsafe` with $1, $2 ... parameters. */
export function prismaRunner(db: DbClient): SqlRunner {
  return {
    query: async <R>(text: string, values: unknown[] = []) => ({
      rows: await db.$queryRawUnsafe<R[]>(text, ...values),
    }),
  } as SqlRunner;
}

/**
 * The auth hot path: key and member in ONE query, by the sha256 hex of the presented secret: the key's
 * current secret, or an older one kept by a rotation (with its grace end; both indexed by hash).
 */
const AUTH_KEY_COLUMNS = `k."id" AS "keyId", k."memberId", m."tier"::text AS "tier", k."name", k."prefix",
       k."revokedAt", k."limits", m."billingPeriodAnchor", k."lastUsedAt", m."suspendedAt",
       k."expiresAt", k."allowedModels", k."allowedIps", m."limits" AS "memberLimits", m."logBodies"`;
const AUTH_KEY_SQL = `SELECT ${AUTH_KEY_COLUMNS}, NULL::timestamptz AS "graceUntil"
  FROM "ApiKey" k JOIN "Member" m ON m."id" = k."memberId"
 WHERE k."hash" = $1
UNION ALL
SELECT ${AUTH_KEY_COLUMNS}, s."graceUntil"
  FROM "ApiKeySecret" s JOIN "ApiKey" k ON k."id" = s."keyId" JOIN "Member" m ON m."id" = k."memberId"
 WHERE s."hash" = $1
 LIMIT 1`;

interface AuthKeyRow extends Record<string, unknown> {
  keyId: string;
  memberId: string;
  tier: Tier;
  name: string;
  prefix: string;
  revokedAt: Date | null;
  limits: unknown;
  memberLimits: unknown;
  billingPeriodAnchor: Date;
  lastUsedAt: Date | null;
  suspendedAt: Date | null;
  expiresAt: Date | null;
  allowedModels: string[] | null;
  allowedIps: string[] | null;
  graceUntil: Date | null;
  logBodies: boolean;
}

/**
 * The key with this secret's hash and its member. null for an unknown hash, an old secret whose grace
 * has ended (at `now`) and, unless includeRevoked, for a revoked key or a key of a suspended member
 * (operator console: suspend). An expired key is returned (with expiresAt): the gateway answers it
 * with its own error, key_expired.
 */
export async function findActiveKeyByHash(
  db: SqlRunner,
  hash: string,
  options: { includeRevoked?: boolean; now?: Date } = {},
): Promise<AuthKey | null> {
  const { rows } = await db.query<AuthKeyRow>(AUTH_KEY_SQL, [hash]);
  const row = rows[0];
  if (!row) return null;
  if ((row.revokedAt || row.suspendedAt) && !options.includeRevoked) return null;
  const graceUntil = row.graceUntil ? new Date(row.graceUntil) : null;
  if (graceUntil && graceUntil.getTime() <= (options.now ?? new Date()).getTime()) return null;
  return {
    keyId: row.keyId,
    memberId: row.memberId,
    tier: row.tier,
    name: row.name,
    prefix: row.prefix,
    revoked: row.revokedAt !== null,
    limits: row.limits ?? null,
    memberLimits: row.memberLimits ?? null,
    billingPeriodAnchor: new Date(row.billingPeriodAnchor),
    lastUsedAt: row.lastUsedAt ? new Date(row.lastUsedAt) : null,
    expiresAt: row.expiresAt ? new Date(row.expiresAt) : null,
    allowedModels: row.allowedModels ?? [],
    allowedIps: row.allowedIps ?? [],
    graceUntil,
    logBodies: row.logBodies === true,
  };
}

const TOUCH_KEY_SQL = `UPDATE "ApiKey" SET "lastUsedAt" = $1
 WHERE "id" = $2 AND ("lastUsedAt" IS NULL OR "lastUsedAt" <= $3)
 RETURNING 1 AS "touched"`;

/**
 * Records that a key was used, at most once per `minIntervalMs` per key (default 60 s): a cheap UPDATE
 * that usually matches nothing. Returns true when the row was updated.
 */
export async function touchKeyLastUsed(
  db: SqlRunner,
  keyId: string,
  at: Date = new Date(),
  minIntervalMs = 60_000,
): Promise<boolean> {
  const before = new Date(at.getTime() - minIntervalMs);
  const { rows } = await db.query(TOUCH_KEY_SQL, [at, keyId, before]);
  return rows.length > 0;
}
