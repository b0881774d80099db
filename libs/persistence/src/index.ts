// @infer/persistence: PostgreSQL through Prisma (adapter-pg) for members, API keys, the model
// catalog and the usage ledger, plus database creation and migrations (wasm schema engine).
// Needs the generated client: `npm run db:generate -w @infer/persistence`.
// Everything but Prisma's client itself and the migrations is in ./lazy.ts (@infer/persistence/lazy),
// which loads neither.

export * from './lazy.js';
export * from './migrate/index.js';
export {
  type CreatePrismaOptions,
  createPrisma,
  createPrismaOnPool,
  Prisma,
  PrismaClient,
} from './prisma.js';
export { createRepositories, type Repositories } from './repositories.js';
