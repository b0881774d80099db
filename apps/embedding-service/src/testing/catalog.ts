import { type CatalogEntry, type CatalogEntryInput, CatalogEntrySchema } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import type { EngineContext } from '../engines/settings.js';

/** A catalog entry for tests, parsed like the real catalog. */
export function catalogEntry(
  over: Partial<CatalogEntryInput> & Pick<CatalogEntryInput, 'engine'>,
): CatalogEntry {
  return CatalogEntrySchema.parse({
    id: 'test-model',
    kind: 'embedding',
    rank: 1,
    tiers: ['community'],
    ...over,
  });
}

export const silentLog = createLogger('embedding-service-test', 'silent');

export function engineContext(model: CatalogEntry): EngineContext {
  return { model, log: silentLog };
}

export const neverAborted = new AbortController().signal;

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] as number) * (b[i] as number);
    na += (a[i] as number) ** 2;
    nb += (b[i] as number) ** 2;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}
