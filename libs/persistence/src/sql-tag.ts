import { createRequire } from 'node:module';
import type * as RuntimeUtils from '@prisma/client-runtime-utils';

// Prisma's client runtime (a CommonJS module) requires @prisma/client-runtime-utils; an `import` would
// load the package's ES build, a second copy with classes of its own. Required here, it is the very
// module the runtime uses once loaded.
const utils = createRequire(import.meta.url)('@prisma/client-runtime-utils') as typeof RuntimeUtils;

/**
 * Prisma.sql, Prisma.join, Prisma.raw, Prisma.empty and Prisma.DbNull without loading Prisma's client:
 * the client's runtime re-exports these very objects from @prisma/client-runtime-utils (a 70 KB
 * module), so `$queryRaw` and the JSON columns take them as their own.
 */
export const PrismaSql = {
  sql: utils.sql,
  join: utils.join,
  raw: utils.raw,
  empty: utils.empty,
  DbNull: utils.DbNull,
} as const;
export type Sql = RuntimeUtils.Sql;
