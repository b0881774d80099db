import { ApiKeysRepository, CatalogRepository, createPrisma } from '@infer/persistence';
import type { KeyStore } from '../auth/key-cache.js';
import type { CatalogSource } from '../catalog/catalog.js';

/** The gateway's view of PostgreSQL: key lookups for auth (and their last-used time) and the catalog. */
export async function openPersistence(databaseUrl: string) {
  const prisma = createPrisma(databaseUrl);
  const keys = new ApiKeysRepository(prisma);
  const catalog = new CatalogRepository(prisma);
  const keyStore: KeyStore = {
    async findActiveByHash(hash) {
      const k = await keys.findActiveByHash(hash);
      if (!k) return null;
      // Runs only when the key cache misses (at most once per TTL per key and replica), never per request;
      // the UPDATE itself writes at most once a minute per key. A failure only loses a timestamp.
      keys.touchLastUsed(k.keyId).catch(() => undefined);
      return {
        keyId: k.keyId,
        memberId: k.memberId,
        tier: k.tier,
        billingAnchor: k.billingPeriodAnchor,
        overrides: (k.limits as Record<string, unknown> | null) ?? null,
      };
    },
  };
  const catalogSource: CatalogSource = { listEnabled: () => catalog.listEnabled() };
  return { prisma, keyStore, catalogSource, close: () => prisma.$disconnect() };
}
