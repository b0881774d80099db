// The types of a database handle, and inTransaction. Type imports only: nothing here loads Prisma's
// generated client (the gateway's start-up must not; see lazy-db.ts).
import type { Prisma } from './generated/prisma/client.js';
import type { createPrisma } from './prisma.js';

/** Prisma's client (created by createPrisma, or on first use by lazyPrisma). */
export type Db = ReturnType<typeof createPrisma>;

/** The client, or the client of an interactive transaction (`db.$transaction(async (tx) => ...)`). */
export type DbClient = Db | Prisma.TransactionClient;

/**
 * Runs `fn` in a transaction, or inside the one `db` already is (Prisma 7 runs a `$transaction` of a
 * transaction client inside that same transaction: same txid, checked).
 */
export function inTransaction<T>(db: DbClient, fn: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return '$transaction' in db ? db.$transaction(fn) : fn(db);
}
