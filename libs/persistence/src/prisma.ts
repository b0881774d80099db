import { PrismaPg } from '@prisma/adapter-pg';
import { databaseUrlFromEnv } from './database.js';
import { type Prisma, PrismaClient } from './generated/prisma/client.js';

export type {
  ApiKey,
  Batch,
  BatchLine,
  File,
  Member,
  Model,
  Operator,
  UsageEvent as UsageEventRow,
} from './generated/prisma/client.js';
export { Prisma, PrismaClient } from './generated/prisma/client.js';

export interface CreatePrismaOptions {
  /** Size of the pg pool (default: pg's 10). */
  poolSize?: number;
}

/** A PrismaClient on the pg driver adapter. Close it with `$disconnect()`. */
export function createPrisma(databaseUrl: string = databaseUrlFromEnv(), options: CreatePrismaOptions = {}) {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    ...(options.poolSize ? { max: options.poolSize } : {}),
  });
  return new PrismaClient({ adapter });
}

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
