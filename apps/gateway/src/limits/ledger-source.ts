import { type SqlRunner, usageTotal } from '@infer/persistence/lazy';
import type { LedgerSource } from './limits.store.js';

/** Rebuilds quota counters from the usage ledger in PostgreSQL. */
export function sqlLedgerSource(db: SqlRunner): LedgerSource {
  return { total: (q) => usageTotal(db, q) };
}
