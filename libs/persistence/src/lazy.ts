// @infer/persistence/lazy: the package without Prisma's client at import. Importing it loads neither
// the generated client nor `@prisma/client/runtime` (nor the migrations' engine): the repositories take
// a Db (`lazyPrisma(pool).db`: the client made on first use), and the queries of queries.ts,
// listEnabledModels and usageTotal run on a pg pool directly. The gateway imports this entry only
// (ADR 0014, "Prisma's client on first use"); @infer/persistence is this plus createPrisma, Prisma,
// PrismaClient, createRepositories and the migrations.

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
  type CatalogRow,
  type CatalogSyncResult,
  entryToRow,
  listEnabledModels,
  loadCatalogFile,
  parseCatalog,
  rowToEntry,
} from './catalog.js';
export { type Db, type DbClient, inTransaction } from './db.js';
export {
  InvalidInputError,
  isDatabaseUnavailable,
  isUserError,
  NotFoundError,
  PersistenceUserError,
  prismaErrorCode,
} from './errors.js';
export { type LazyPrisma, lazyPrisma, prismaLoaded } from './lazy-db.js';
export {
  InvitationError,
  type InvitationProblem,
  type MemberInvitationInfo,
  MemberInvitationsRepository,
  MemberSessionsRepository,
  type SessionWithMember,
} from './member-accounts.js';
export {
  type CreateMemberInput,
  type MemberSearch,
  MembersRepository,
  type MemberWithKeyCount,
} from './members.js';
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
export { createPgPool, type PgPoolOptions } from './pg-pool.js';
export type { ApiKey, Batch, BatchLine, File, Member, Model, Prisma, UsageEventRow } from './prisma.js';
export { findActiveKeyByHash, prismaRunner, touchKeyLastUsed } from './queries.js';
export {
  dayStart,
  type RefusalSummary,
  type RequestLogQuery,
  RequestLogRepository,
  type RequestLogRow,
  type RequestLogWriteResult,
  requestLogPartitionName,
  type StatusClass,
} from './request-log.js';
export { PrismaSql, type Sql } from './sql-tag.js';
export { type StoredResponse, StoredResponsesRepository } from './stored-responses.js';
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
