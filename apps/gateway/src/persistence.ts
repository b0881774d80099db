import { cidrMatcher, withMemberLimits } from '@infer/contracts';
import {
  createPgPool,
  findActiveKeyByHash,
  lazyPrisma,
  listEnabledModels,
  touchKeyLastUsed,
} from '@infer/persistence/lazy';
import type { Logger } from '@infer/telemetry';
import type { AuthedKey, KeyStore } from './auth/key-cache.js';
import type { CatalogSource } from './catalog/catalog.js';

/**
 * The gateway's view of PostgreSQL: one pg pool. Key lookups for auth (and their last-used time), the
 * catalog, the limits' ledger totals and /readyz run on it directly; Prisma's client (`prisma`, for the
 * console/admin routes, /v1/files, /v1/batches ...) is made on the same pool on its first use, so a
 * gateway that serves only the public API never loads it (ADR 0014, "Prisma's client on first use").
 */
export async function openPersistence(databaseUrl: string, log?: Logger) {
  const pool = createPgPool(databaseUrl, {
    onError: (err) => log?.warn({ err }, 'an idle PostgreSQL connection failed'),
  });
  const prisma = lazyPrisma(pool, {
    onLoad: (ms) => log?.info({ ms: Math.round(ms) }, "Prisma's client loaded (first use)"),
  });
  const keyStore: KeyStore = {
    async findActiveByHash(hash) {
      const k = await findActiveKeyByHash(pool, hash);
      if (!k) return null;
      // Runs only when the key cache misses (at most once per TTL per key and replica), never per request;
      // the UPDATE itself writes at most once a minute per key. A failure only loses a timestamp.
      touchKeyLastUsed(pool, k.keyId).catch(() => undefined);
      return {
        keyId: k.keyId,
        memberId: k.memberId,
        tier: k.tier,
        billingAnchor: k.billingPeriodAnchor,
        overrides: withMemberLimits(k.limits, k.memberLimits),
        // Body logging (ADR 0110): the member's switch, cached with the key like its tier.
        ...(k.logBodies ? { logBodies: true } : {}),
        ...keyRules(k),
      };
    },
  };
  const catalogSource: CatalogSource = { listEnabled: () => listEnabledModels(pool) };
  return {
    pool,
    prisma: prisma.db,
    keyStore,
    catalogSource,
    close: async () => {
      await prisma.close();
      await pool.end();
    },
  };
}

/**
 * A key's lifecycle in the form the auth hot path checks (auth.guard.ts admit()): built once per key
 * lookup, so a request pays one timestamp comparison, one Set lookup and, only with an allow-list,
 * one CIDR match; nothing when the lists are empty.
 */
export function keyRules(k: {
  expiresAt: Date | null;
  graceUntil: Date | null;
  allowedModels: string[];
  allowedIps: string[];
}): Pick<AuthedKey, 'notAfter' | 'expiresAt' | 'models' | 'ipAllowed'> {
  const expiresAt = k.expiresAt ? k.expiresAt.getTime() : Number.POSITIVE_INFINITY;
  const graceUntil = k.graceUntil ? k.graceUntil.getTime() : Number.POSITIVE_INFINITY;
  return {
    notAfter: Math.min(expiresAt, graceUntil),
    expiresAt,
    models: k.allowedModels.length ? new Set(k.allowedModels) : null,
    ipAllowed: k.allowedIps.length ? cidrMatcher(k.allowedIps) : null,
  };
}
