import pg from 'pg';

export interface PgPoolOptions {
  /** Connections at most (default: pg's 10, as Prisma's adapter had). */
  max?: number;
  /** An idle connection failed (the server went away ...): the pool drops it and makes another. */
  onError?: (error: Error) => void;
}

/**
 * A pg pool for queries on pg directly (queries.ts) and, through `createPrismaOnPool` / `lazyPrisma`, for
 * Prisma's client too: one pool per process. An error of an idle connection is reported to `onError`
 * (ignored by default, as Prisma's adapter does) instead of being thrown by the pool's 'error' event.
 */
export function createPgPool(databaseUrl: string, options: PgPoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, ...(options.max ? { max: options.max } : {}) });
  pool.on('error', options.onError ?? (() => undefined));
  return pool;
}
