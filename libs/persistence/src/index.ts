// @infer/persistence: PostgreSQL through Prisma (adapter-pg) for members, API keys, the model
// catalog and the usage ledger, plus database creation and migrations (wasm schema engine).
// Needs the generated client: `npm run db:generate -w @infer/persistence`.

export {
  API_KEY_DISPLAY_LENGTH,
  API_KEY_PREFIX,
  type ApiKeyInfo,
  ApiKeysRepository,
  type AuthKey,
  generateApiKey,
  hashApiKey,
  isApiKeyFormat,
} from './api-keys.js';
export {
  type AuditActor,
  type AuditEntry,
  type AuditQuery,
  AuditRepository,
  type AuditRow,
  redactSecrets,
} from './audit.js';
export {
  type CatalogModel,
  CatalogRepository,
  type CatalogSyncResult,
  entryToRow,
  loadCatalogFile,
  parseCatalog,
  rowToEntry,
} from './catalog.js';
export {
  InvalidInputError,
  isUserError,
  NotFoundError,
  PersistenceUserError,
  prismaErrorCode,
} from './errors.js';
export {
  type CreateMemberInput,
  type MemberSearch,
  MembersRepository,
  type MemberWithKeyCount,
} from './members.js';
export * from './migrate/index.js';
export {
  type CreateOperatorInput,
  normalizeEmail,
  OPERATOR_ROLES,
  type Operator,
  type OperatorRole,
  OperatorSessionsRepository,
  OperatorsRepository,
  parseOperatorRole,
  type SessionWithOperator,
} from './operators.js';
export {
  hashPassword,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  passwordProblem,
  verifyPassword,
} from './passwords.js';
export type { ApiKey, Batch, BatchLine, File, Member, Model, UsageEventRow } from './prisma.js';
export {
  type CreatePrismaOptions,
  createPrisma,
  type Db,
  type DbClient,
  inTransaction,
  Prisma,
  PrismaClient,
} from './prisma.js';
export { createRepositories, type Repositories } from './repositories.js';
export { parseTier } from './tiers.js';
export {
  type InsertBatchResult,
  type UsageQuery,
  UsageRepository,
  type UsageSummary,
  type UsageTotals,
} from './usage.js';
export type { SqlRunner } from './usage-partitions.js';
export {
  type UsageGroupBy,
  type UsageReportQuery,
  type UsageReportRow,
  type UsageTotalQuery,
  usageReport,
  usageTotal,
} from './usage-report.js';
