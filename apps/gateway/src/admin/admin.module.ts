import {
  ApiKeysRepository,
  AuditRepository,
  type Db,
  MembersRepository,
  OperatorsRepository,
  RequestLogRepository,
} from '@infer/persistence/lazy';
import { SearchDocumentsRepository } from '@infer/search-index';
import { KEYS_CHANGED, PRISMA } from '../infra/tokens.js';
import { AdminGuard } from './access/admin.guard.js';
import { AdminAccess } from './access/admin-access.service.js';
import { AlertsController } from './alerts/alerts.controller.js';
import { AlertsService } from './alerts/alerts.service.js';
import { AuditController } from './audit/audit.controller.js';
import { AuditService } from './audit/audit.service.js';
import { BatchesAdminController } from './batches/batches.controller.js';
import { BatchesAdminService } from './batches/batches.service.js';
import { AdminInvalidation } from './invalidation.service.js';
import { KeysAdminController } from './keys/keys.controller.js';
import { KeysService } from './keys/keys.service.js';
import { LogsController } from './logs/logs.controller.js';
import { LogsService } from './logs/logs.service.js';
import { MemberInvitationsController } from './member-invitations/member-invitations.controller.js';
import { MembersAdminController } from './members/members.controller.js';
import { MembersService } from './members/members.service.js';
import { ModelsAdminController } from './models/models.controller.js';
import { ModelsAdminService } from './models/models.service.js';
import { OidcController } from './oidc/oidc.controller.js';
import { OperatorsController } from './operators/operators.controller.js';
import { OperatorsService } from './operators/operators.service.js';
import { OverviewController } from './overview/overview.controller.js';
import { OverviewService } from './overview/overview.service.js';
import { QueueJobsController } from './queues/queue-jobs.controller.js';
import { QueueJobsService } from './queues/queue-jobs.service.js';
import { QueuesAdminController } from './queues/queues.controller.js';
import { QueuesService } from './queues/queues.service.js';
import { QuotasController } from './quotas/quotas.controller.js';
import { QuotasService } from './quotas/quotas.service.js';
import { SearchDocumentsAdminController } from './search-index/search-documents.controller.js';
import { SearchDocumentsService } from './search-index/search-documents.service.js';
import { SearchIndexAdminController } from './search-index/search-index.controller.js';
import { SearchIndexService } from './search-index/search-index.service.js';
import { SessionController } from './session/session.controller.js';
import { StoredResponsesAdminController } from './stored-responses/stored-responses.controller.js';
import { StoredResponsesAdminService } from './stored-responses/stored-responses.service.js';
import { UsageReportController } from './usage/usage-report.controller.js';
import { UsageReportService } from './usage/usage-report.service.js';
import { UsageRollupsController } from './usage/usage-rollups.controller.js';
import { UsageRollupsService } from './usage/usage-rollups.service.js';

/**
 * The operators' room: every controller under /admin (one folder per resource) and what they need of
 * their own. Each handler carries `@Admin(need)` (access/admin.decorator.ts), which puts it behind
 * AdminGuard; access/admin-routes.spec.ts walks the route table and fails on an /admin route without it.
 * Infrastructure (PRISMA, REDIS, NATS, config), the catalog and the limits come from the app module.
 */
export const ADMIN_CONTROLLERS = [
  SessionController,
  OidcController,
  OperatorsController,
  AuditController,
  AlertsController,
  MembersAdminController,
  MemberInvitationsController,
  KeysAdminController,
  ModelsAdminController,
  UsageReportController,
  UsageRollupsController,
  QuotasController,
  QueuesAdminController,
  QueueJobsController,
  SearchIndexAdminController,
  SearchDocumentsAdminController,
  OverviewController,
  BatchesAdminController,
  LogsController,
  StoredResponsesAdminController,
];

export const ADMIN_PROVIDERS = [
  // Who may use /admin: ADMIN_TOKEN or an operator console session.
  AdminAccess,
  AdminGuard,
  // The repositories the services read with (changes use ones bound to their transaction).
  ...[
    MembersRepository,
    ApiKeysRepository,
    OperatorsRepository,
    AuditRepository,
    SearchDocumentsRepository,
    RequestLogRepository,
  ].map((repo) => ({ provide: repo, useFactory: (db: Db) => new repo(db), inject: [PRISMA] })),
  MembersService,
  KeysService,
  ModelsAdminService,
  OperatorsService,
  AuditService,
  AlertsService,
  LogsService,
  StoredResponsesAdminService,
  UsageReportService,
  UsageRollupsService,
  QuotasService,
  QueuesService,
  QueueJobsService,
  SearchIndexService,
  SearchDocumentsService,
  BatchesAdminService,
  OverviewService,
  // Admin changes reach every gateway replica at once (core NATS; TTLs are the fallback).
  AdminInvalidation,
  // The same for the members' account pages (revoke, rotate), which may not import admin code.
  { provide: KEYS_CHANGED, useExisting: AdminInvalidation },
];
