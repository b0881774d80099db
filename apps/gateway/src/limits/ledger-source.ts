import { type Db, usageTotal } from '@infer/persistence';
import type { LedgerSource } from './limits.engine.js';

/** Rebuilds quota counters from the usage ledger in PostgreSQL. */
export function prismaLedgerSource(db: Db): LedgerSource {
  return { total: (q) => usageTotal(db, q) };
}
