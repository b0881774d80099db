import { AdminGuard } from './access/admin.guard.js';
import { AdminAccess } from './access/admin-access.service.js';
import { BatchesAdminController } from './batches/batches.controller.js';
import { AdminInvalidation } from './invalidation.js';
import { MembersAdminController } from './members/members.controller.js';
import { OidcController } from './oidc/oidc.controller.js';
import { OperatorsController } from './operators/operators.controller.js';
import { OverviewController } from './overview/overview.controller.js';
import { OverviewService } from './overview/overview.service.js';
import { QueueJobsController } from './queues/queue-jobs.controller.js';
import { QueuesAdminController } from './queues/queues.controller.js';
import { QuotasController } from './quotas/quotas.controller.js';
import { SearchDocumentsAdminController } from './search-index/search-documents.controller.js';
import { SearchIndexAdminController } from './search-index/search-index.controller.js';
import { SessionController } from './session/session.controller.js';
import { UsageReportController } from './usage/usage-report.controller.js';
import { UsageRollupsController } from './usage/usage-rollups.controller.js';

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
  MembersAdminController,
  UsageReportController,
  UsageRollupsController,
  QuotasController,
  QueuesAdminController,
  QueueJobsController,
  SearchIndexAdminController,
  SearchDocumentsAdminController,
  OverviewController,
  BatchesAdminController,
];

export const ADMIN_PROVIDERS = [
  // Who may use /admin: ADMIN_TOKEN or an operator console session.
  AdminAccess,
  AdminGuard,
  OverviewService,
  // Admin changes reach every gateway replica at once (core NATS; TTLs are the fallback).
  AdminInvalidation,
];
