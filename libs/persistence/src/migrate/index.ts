// Entry point `@infer/persistence/migrate`: database creation and migrations only, without the
// generated Prisma client (so it works before `prisma generate` has run).
export {
  DEFAULT_DATABASE_URL,
  databaseExists,
  databaseName,
  databaseUrlFromEnv,
  dropDatabase,
  ensureDatabase,
  redactUrl,
  withDatabase,
} from '../database.js';
export { ensureUsagePartitionsSql, monthStart, usagePartitionName } from '../usage-partitions.js';
export {
  createMigrationAdapterFactory,
  type EngineLogLine,
  loadSchemaEngineWasm,
  openSchemaEngine,
} from './engine.js';
export {
  type CreateMigrationResult,
  createMigration,
  DEFAULT_MIGRATIONS_DIR,
  DEFAULT_SCHEMA_PATH,
  type DeployResult,
  loadMigrationsList,
  type MigrateOptions,
  type MigrationStatus,
  migrateDeploy,
  migrateStatus,
} from './migrations.js';
