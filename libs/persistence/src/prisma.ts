import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { databaseUrlFromEnv } from './database.js';
import { PrismaClient } from './generated/prisma/client.js';

export { type Db, type DbClient, inTransaction } from './db.js';
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

/**
 * A PrismaClient on an existing pg pool (shared with queries run on pg directly). `$disconnect()` leaves
 * the pool open: its owner ends it.
 */
export function createPrismaOnPool(pool: pg.Pool): ReturnType<typeof createPrisma> {
  return new PrismaClient({ adapter: new PrismaPg(pool) });
}
