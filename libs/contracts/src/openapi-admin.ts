import type { z } from 'zod';
import { MemberInvitationSchema, MemberInviteRequestSchema } from './account.js';
import { AdminBatchListSchema } from './batch.js';
import {
  AdminAlertListSchema,
  AdminKeyListSchema,
  AdminKeySchema,
  AdminMemberSchema,
  AuditListSchema,
  CreateMemberRequestSchema,
  CreateOperatorRequestSchema,
  DailyUsageSchema,
  HourlyUsageSchema,
  LoginRequestSchema,
  MemberQuotasSchema,
  MemberRefusalsSchema,
  MemberStoredResponsesSchema,
  MintedKeySchema,
  MintKeyRequestSchema,
  ModelPoolsSchema,
  OidcConfigSchema,
  OperatorSchema,
  OverviewSchema,
  QueueJobDetailSchema,
  QueuePausedSchema,
  RequestLogDetailSchema,
  RequestLogListSchema,
  RotateKeyRequestSchema,
  SessionSchema,
  SetKeyLimitsRequestSchema,
  SetMemberLimitsRequestSchema,
  StoredResponsesPurgedSchema,
  UpdateKeyRequestSchema,
  UpdateMemberRequestSchema,
  UpdateModelRequestSchema,
  UpdateOperatorRequestSchema,
} from './console.js';

type Json = Record<string, unknown>;

interface AdminOp {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  id: string;
  summary: string;
  /** Least role of a console session; ADMIN_TOKEN may do everything. */
  role: 'none' | 'viewer' | 'admin' | 'owner';
  body?: z.ZodType;
  ok?: z.ZodType;
  query?: string[];
  status?: number;
}

/** Every /admin route: the operator console's API (and automation with ADMIN_TOKEN). */
const ADMIN_OPS: AdminOp[] = [
  {
    method: 'post',
    path: '/admin/session',
    id: 'signIn',
    summary: 'Sign in (sets the session cookie)',
    role: 'none',
    body: LoginRequestSchema,
    ok: SessionSchema,
  },
  {
    method: 'get',
    path: '/admin/session',
    id: 'getSession',
    summary: 'The current session and its CSRF token',
    role: 'none',
    ok: SessionSchema,
  },
  { method: 'delete', path: '/admin/session', id: 'signOut', summary: 'Sign out', role: 'viewer' },
  {
    method: 'get',
    path: '/admin/oidc',
    id: 'getOidcConfig',
    summary: 'Whether single sign-on (OpenID Connect) is offered, and the provider name',
    role: 'none',
    ok: OidcConfigSchema,
  },
  {
    method: 'get',
    path: '/admin/oidc/start',
    id: 'startOidcSignIn',
    summary: "Redirects to the OpenID provider's sign-in (authorization code flow with PKCE)",
    role: 'none',
    status: 302,
  },
  {
    method: 'get',
    path: '/admin/oidc/callback',
    id: 'finishOidcSignIn',
    summary:
      'The redirect URL: sets the session cookie and redirects to /console/, or to /console/?sso_error=<code>',
    role: 'none',
    query: ['code', 'state', 'error'],
    status: 302,
  },
  { method: 'get', path: '/admin/operators', id: 'listOperators', summary: 'List operators', role: 'owner' },
  {
    method: 'post',
    path: '/admin/operators',
    id: 'createOperator',
    summary: 'Create an operator',
    role: 'owner',
    body: CreateOperatorRequestSchema,
    ok: OperatorSchema,
    status: 201,
  },
  {
    method: 'patch',
    path: '/admin/operators/{id}',
    id: 'updateOperator',
    summary: "Change an operator's role or disable/enable it",
    role: 'owner',
    body: UpdateOperatorRequestSchema,
    ok: OperatorSchema,
  },
  {
    method: 'get',
    path: '/admin/alerts',
    id: 'listAlerts',
    summary:
      'Budget and token-allowance alerts (80/90/100 %), newest first, each with its webhook delivery log',
    role: 'viewer',
    ok: AdminAlertListSchema,
    query: ['member', 'status', 'limit'],
  },
  {
    method: 'get',
    path: '/admin/audit',
    id: 'listAudit',
    summary: 'The audit log, newest first (keyset paging with `before`)',
    role: 'viewer',
    ok: AuditListSchema,
    query: ['actor', 'action', 'target_type', 'target_id', 'from', 'to', 'before', 'limit'],
  },
  {
    method: 'get',
    path: '/admin/logs',
    id: 'listRequestLog',
    summary:
      'The request log, newest first (keyset paging with `before`): every answered request, refusals included',
    role: 'viewer',
    ok: RequestLogListSchema,
    query: ['member', 'key', 'model', 'status', 'code', 'from', 'to', 'before', 'limit'],
  },
  {
    method: 'get',
    path: '/admin/logs/{requestId}',
    id: 'getRequestLog',
    summary:
      'One request by its id (the `x-request-id` header, the request id of an error), with its bodies when they were logged',
    role: 'viewer',
    ok: RequestLogDetailSchema,
  },
  {
    method: 'get',
    path: '/admin/members/{id}/refusals',
    id: 'memberRefusals',
    summary: 'Why a member is refused: per limit, refusals in the last hour and day, and the last one',
    role: 'viewer',
    ok: MemberRefusalsSchema,
  },
  {
    method: 'get',
    path: '/admin/members/{id}/stored-responses',
    id: 'memberStoredResponses',
    summary: "How many stored responses (the Responses API's `store`, unexpired) the member has",
    role: 'viewer',
    ok: MemberStoredResponsesSchema,
  },
  {
    method: 'delete',
    path: '/admin/members/{id}/stored-responses',
    id: 'purgeMemberStoredResponses',
    summary: 'Delete every stored response of the member (audited); its ids are then 404 for the API',
    role: 'admin',
    ok: StoredResponsesPurgedSchema,
  },
  {
    method: 'get',
    path: '/admin/members',
    id: 'listMembers',
    summary: 'Search and page members',
    role: 'viewer',
    query: ['q', 'tier', 'status', 'after', 'limit'],
  },
  {
    method: 'post',
    path: '/admin/members',
    id: 'createMember',
    summary: 'Create a member',
    role: 'admin',
    body: CreateMemberRequestSchema,
    ok: AdminMemberSchema,
    status: 201,
  },
  {
    method: 'get',
    path: '/admin/members/{id}',
    id: 'getMember',
    summary: 'A member and its keys',
    role: 'viewer',
  },
  {
    method: 'patch',
    path: '/admin/members/{id}',
    id: 'updateMember',
    summary: 'Change tier, billing anchor, suspension, body logging',
    role: 'admin',
    body: UpdateMemberRequestSchema,
    ok: AdminMemberSchema,
  },
  {
    method: 'put',
    path: '/admin/members/{id}/limits',
    id: 'setMemberLimits',
    summary: "Set or clear (null: the tier's) a member's own limits: its monthly budget in dollars",
    role: 'admin',
    body: SetMemberLimitsRequestSchema,
    ok: AdminMemberSchema,
  },
  {
    method: 'post',
    path: '/admin/members/{id}/invitations',
    id: 'inviteMember',
    summary:
      "A one-time link where the member sets their account password (also a reset; voids the member's older links; in this answer only)",
    role: 'admin',
    body: MemberInviteRequestSchema,
    ok: MemberInvitationSchema,
    status: 201,
  },
  {
    method: 'post',
    path: '/admin/members/{id}/keys',
    id: 'mintKey',
    summary: 'Mint an API key (the key is in this answer only)',
    role: 'admin',
    body: MintKeyRequestSchema,
    ok: MintedKeySchema,
    status: 201,
  },
  {
    method: 'get',
    path: '/admin/members/{id}/quotas',
    id: 'getMemberQuotas',
    summary:
      "Every quota of a member, live: token allowances (month or billing period) and images per month, each active key's rolling token budgets and searches per day",
    role: 'viewer',
    ok: MemberQuotasSchema,
  },
  {
    method: 'get',
    path: '/admin/keys',
    id: 'listKeys',
    summary:
      'Search and page the keys of all members, newest first, or with `sort=expiring` active keys with an expiry, expiring soonest first (keyset paging with `after`)',
    role: 'viewer',
    ok: AdminKeyListSchema,
    query: ['q', 'member', 'status', 'sort', 'after', 'limit'],
  },
  {
    method: 'post',
    path: '/admin/keys/{key}/rotate',
    id: 'rotateKey',
    summary:
      'Rotate a key: a new secret for the same key id (in this answer only); the old secret works until `grace` passes (default 24h, `0`: revoked now)',
    role: 'admin',
    body: RotateKeyRequestSchema,
    ok: MintedKeySchema,
    status: 201,
  },
  {
    method: 'patch',
    path: '/admin/keys/{key}',
    id: 'updateKey',
    summary:
      "Change a key's expiry (`expires_at` or `expires_in`), model allow-list and IP allow-list (CIDR)",
    role: 'admin',
    body: UpdateKeyRequestSchema,
    ok: AdminKeySchema,
  },
  {
    method: 'post',
    path: '/admin/keys/{key}/revoke',
    id: 'revokeKey',
    summary: 'Revoke a key (id or prefix)',
    role: 'admin',
    ok: AdminKeySchema,
  },
  {
    method: 'put',
    path: '/admin/keys/{key}/limits',
    id: 'setKeyLimits',
    summary: "Set or clear (null) a key's limit overrides",
    role: 'admin',
    body: SetKeyLimitsRequestSchema,
    ok: AdminKeySchema,
  },
  {
    method: 'get',
    path: '/admin/keys/{key}/limits',
    id: 'getKeyLimits',
    summary: 'The live state of every limit of a key',
    role: 'viewer',
  },
  {
    method: 'get',
    path: '/admin/models',
    id: 'listAllModels',
    summary: 'The catalog, disabled models included',
    role: 'viewer',
  },
  {
    method: 'get',
    path: '/admin/models/pools',
    id: 'listModelPools',
    summary: "Each model's engine endpoints (health, in flight, cooldowns, errors) over the service replicas",
    role: 'viewer',
    ok: ModelPoolsSchema,
  },
  {
    method: 'patch',
    path: '/admin/models/{id}',
    id: 'updateModel',
    summary: 'Enable or disable a model, or log its bodies (live)',
    role: 'admin',
    body: UpdateModelRequestSchema,
  },
  {
    method: 'get',
    path: '/admin/usage',
    id: 'usageReport',
    summary: 'Ledger totals for a period (raw ledger)',
    role: 'viewer',
    query: ['from', 'to', 'member', 'key', 'model', 'group_by'],
  },
  {
    method: 'get',
    path: '/admin/usage/daily',
    id: 'usageDaily',
    summary: 'Usage per UTC day from the daily rollup (at most 366 days)',
    role: 'viewer',
    ok: DailyUsageSchema,
    query: ['from', 'to', 'member', 'key', 'model', 'group_by'],
  },
  {
    method: 'get',
    path: '/admin/usage/hourly',
    id: 'usageHourly',
    summary: 'Platform usage per model and hour from the hourly rollup',
    role: 'viewer',
    ok: HourlyUsageSchema,
    query: ['hours'],
  },
  {
    method: 'get',
    path: '/admin/queues',
    id: 'listQueues',
    summary: 'Job counts and timings per BullMQ queue',
    role: 'viewer',
  },
  {
    method: 'post',
    path: '/admin/queues/{queue}/pause',
    id: 'pauseQueue',
    summary: 'Pause a queue: workers take no new job until it is resumed (jobs keep arriving)',
    role: 'admin',
    ok: QueuePausedSchema,
  },
  {
    method: 'post',
    path: '/admin/queues/{queue}/resume',
    id: 'resumeQueue',
    summary: 'Resume a paused queue',
    role: 'admin',
    ok: QueuePausedSchema,
  },
  {
    method: 'get',
    path: '/admin/queues/{queue}/jobs/{id}',
    id: 'getQueueJob',
    summary: 'One job by id: state, attempts, error and stack, a summary of its data',
    role: 'viewer',
    ok: QueueJobDetailSchema,
  },
  {
    method: 'get',
    path: '/admin/overview',
    id: 'getOverview',
    summary:
      'Live overview: requests/s, error rate, p50/p99 latency and tokens per model per minute, requests in flight, instances, queue depths, ledger lag',
    role: 'viewer',
    ok: OverviewSchema,
    query: ['minutes'],
  },
  {
    method: 'get',
    path: '/admin/overview/stream',
    id: 'streamOverview',
    summary:
      'The overview as Server-Sent Events (text/event-stream): `event: overview` with the Overview every 2 s; `event: end` when the session ends or after 10 minutes (reconnect)',
    role: 'viewer',
    query: ['minutes'],
  },
  {
    method: 'get',
    path: '/admin/queues/{queue}/jobs',
    id: 'listQueueJobs',
    summary: 'Jobs of a queue in one state, with their errors',
    role: 'viewer',
    query: ['state', 'start', 'limit'],
  },
  {
    method: 'post',
    path: '/admin/queues/{queue}/jobs/{id}/retry',
    id: 'retryQueueJob',
    summary: 'Retry a failed job',
    role: 'admin',
  },
  {
    method: 'delete',
    path: '/admin/queues/{queue}/jobs/{id}',
    id: 'removeQueueJob',
    summary: 'Remove a job',
    role: 'admin',
  },
  {
    method: 'get',
    path: '/admin/members/{memberId}/batches',
    id: 'listMemberBatches',
    summary:
      "One page of a member's batches, newest first, with their progress (0..1) and live request counts; `after` = the previous page's `next_after`",
    role: 'viewer',
    ok: AdminBatchListSchema,
    query: ['status', 'after', 'limit'],
  },
  {
    method: 'post',
    path: '/admin/search/documents',
    id: 'ingestSearchDocuments',
    summary: 'Add or replace documents of the local search index',
    role: 'admin',
  },
  {
    method: 'delete',
    path: '/admin/search/documents',
    id: 'deleteSearchDocuments',
    summary: 'Delete documents of the local search index by url',
    role: 'admin',
  },
];

/**
 * Adds the /admin routes to an OpenAPI paths object. `req`/`res` turn a zod schema into a component
 * reference (input or output side), `errorRef` is the error envelope.
 */
export function addAdminPaths(
  paths: Record<string, Json>,
  req: (s: z.ZodType) => Json,
  res: (s: z.ZodType) => Json,
  errorRef: Json,
): void {
  const error = (description: string) => ({
    description,
    content: { 'application/json': { schema: errorRef } },
  });
  for (const op of ADMIN_OPS) {
    const params: Json[] = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    for (const q of op.query ?? [])
      params.push({ name: q, in: 'query', required: false, schema: { type: 'string' } });
    const mutation = op.method !== 'get';
    const responses: Json = {
      [op.status ?? 200]: {
        description: 'OK',
        ...(op.ok ? { content: { 'application/json': { schema: res(op.ok) } } } : {}),
      },
      400: error('Invalid parameter or body (`param` names it).'),
      401: error('No valid ADMIN_TOKEN or console session (`session_expired`, `invalid_admin_token`).'),
      ...(op.role === 'none'
        ? { 429: error('Too many failed sign-ins (`too_many_sign_ins`, Retry-After).') }
        : {
            403: error(
              `Console session: the role is below ${op.role} (\`insufficient_role\`)${mutation ? ', or X-CSRF-Token is missing or wrong (`csrf_failed`)' : ''}.`,
            ),
          }),
      404: error('Unknown resource, or /admin is off (no ADMIN_TOKEN and no session).'),
    };
    const operation: Json = {
      operationId: op.id,
      summary: op.summary,
      description: `Console role: ${op.role === 'none' ? 'none (sign-in)' : `${op.role} or above`}.${
        mutation && op.role !== 'none' ? ' With the session cookie, send X-CSRF-Token.' : ''
      }`,
      tags: ['Admin'],
      security: op.role === 'none' ? [] : [{ adminToken: [] }, { consoleSession: [] }],
      ...(params.length ? { parameters: params } : {}),
      ...(op.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: req(op.body) } } } }
        : {}),
      responses,
    };
    paths[op.path] = { ...(paths[op.path] ?? {}), [op.method]: operation };
  }
}

export const ADMIN_SECURITY_SCHEMES: Json = {
  adminToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'Authorization: Bearer <ADMIN_TOKEN> (automation)',
  },
  consoleSession: {
    type: 'apiKey',
    in: 'cookie',
    name: 'infer_console_session',
    description:
      'Operator console session (POST /admin/session); mutations also need the X-CSRF-Token header.',
  },
};
