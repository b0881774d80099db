import { z } from 'zod';
import { TierSchema } from './catalog.js';
import { parseCidr, parseDuration } from './key-lifecycle.js';
import { LimitStateSchema, LimitsOverrideSchema } from './limits.js';
import { MoneySchema } from './pricing.js';

/**
 * The operator console's admin API (sign-in, operators, audit log). The same schemas validate the
 * console's forms and the gateway's request bodies.
 */
export const OPERATOR_ROLES = ['owner', 'admin', 'viewer'] as const;
export const OperatorRoleSchema = z.enum(OPERATOR_ROLES);
export type OperatorRoleName = z.infer<typeof OperatorRoleSchema>;

const Email = z.string().trim().toLowerCase().max(320).email();
/** Bounds mirror PASSWORD_MIN_LENGTH / PASSWORD_MAX_LENGTH of @infer/persistence. */
export const OperatorPasswordSchema = z.string().min(12).max(1024);

export const LoginRequestSchema = z
  .object({ email: Email, password: z.string().min(1).max(1024) })
  .strict()
  .meta({ id: 'LoginRequest' });
export type LoginRequest = z.infer<typeof LoginRequestSchema>;

export const OperatorSchema = z
  .object({
    object: z.literal('operator'),
    id: z.string(),
    email: z.string(),
    role: OperatorRoleSchema,
    disabled: z.boolean(),
    sso_only: z.boolean(),
    created_at: z.number().int(),
    last_login_at: z.number().int().nullable(),
  })
  .meta({ id: 'Operator' });
export type OperatorView = z.infer<typeof OperatorSchema>;

export const SessionSchema = z
  .object({
    object: z.literal('session'),
    operator: OperatorSchema,
    /** Send back as `X-CSRF-Token` on every POST/PATCH/PUT/DELETE made with the session cookie. */
    csrf_token: z.string(),
    idle_timeout_s: z.number().int(),
  })
  .meta({ id: 'Session' });
export type SessionView = z.infer<typeof SessionSchema>;

/** Single sign-on (OpenID Connect) as the sign-in page needs to know it: offered or not, and by whom. */
export const OidcConfigSchema = z
  .object({
    object: z.literal('oidc.config'),
    enabled: z.boolean(),
    /** What the button says: "Sign in with <provider_name>". */
    provider_name: z.string().nullable(),
  })
  .meta({ id: 'OidcConfig' });
export type OidcConfigView = z.infer<typeof OidcConfigSchema>;

/**
 * Why a single sign-on ended back on the sign-in page (`/console/?sso_error=<code>`). The console
 * shows its own text for each code, never text from the URL.
 */
export const OidcErrorCodes = [
  'not_configured',
  'provider_unavailable',
  'provider_error',
  'state_mismatch',
  'invalid_response',
  'email_missing',
  'email_unverified',
  'domain_not_allowed',
  'unknown_operator',
  'operator_disabled',
  'identity_mismatch',
  // Members' sign-in (the account pages) through the same provider.
  'unknown_member',
  'member_suspended',
] as const;
export type OidcErrorCode = (typeof OidcErrorCodes)[number];

export const CreateOperatorRequestSchema = z
  .object({ email: Email, role: OperatorRoleSchema, password: OperatorPasswordSchema.optional() })
  .strict()
  .meta({ id: 'CreateOperatorRequest' });
export type CreateOperatorRequest = z.infer<typeof CreateOperatorRequestSchema>;

export const UpdateOperatorRequestSchema = z
  .object({ role: OperatorRoleSchema.optional(), disabled: z.boolean().optional() })
  .strict()
  .refine((v) => v.role !== undefined || v.disabled !== undefined, {
    message: 'give `role` and/or `disabled`',
    path: ['role'],
  })
  .meta({ id: 'UpdateOperatorRequest' });
export type UpdateOperatorRequest = z.infer<typeof UpdateOperatorRequestSchema>;

export const AuditQuerySchema = z
  .object({
    actor: z.string().min(1).max(200).optional(),
    /** Exact action (`operator.create`) or a prefix ending in `.` (`operator.`). */
    action: z
      .string()
      .regex(/^[a-z_]+(\.[a-z_]*)*$/)
      .max(100)
      .optional(),
    target_type: z.string().min(1).max(50).optional(),
    target_id: z.string().min(1).max(200).optional(),
    from: z.coerce.date().optional(),
    to: z.coerce.date().optional(),
    /** The requests of one trace: its W3C trace id (32 hex digits, as the log and trace viewers show it). */
    trace_id: z
      .string()
      .regex(/^[0-9a-f]{32}$/i, 'a trace id is 32 hexadecimal digits')
      .transform((t) => t.toLowerCase())
      .optional(),
    /** Cursor: the `next_before` of the previous page. */
    before: z
      .string()
      .regex(/^\d{1,19}$/)
      .optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
export type AuditQueryParams = z.infer<typeof AuditQuerySchema>;

export const AuditEventSchema = z
  .object({
    id: z.string(),
    at: z.number().int().describe('Unix milliseconds'),
    actor: z.object({ type: z.string(), id: z.string().nullable(), label: z.string() }),
    action: z.string(),
    target: z.object({ type: z.string(), id: z.string().nullable() }),
    before: z.unknown().nullable(),
    after: z.unknown().nullable(),
    ip: z.string().nullable(),
  })
  .meta({ id: 'AuditEvent' });

export const AuditListSchema = z
  .object({ object: z.literal('list'), data: z.array(AuditEventSchema), next_before: z.string().nullable() })
  .meta({ id: 'AuditList' });
export type AuditList = z.infer<typeof AuditListSchema>;

// ---- members, keys, models (console pages 2 to 4) ----

/** An ISO 8601 date or date-time (the start of the member's billing periods). */
const Anchor = z
  .string()
  .max(40)
  .refine((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date');

export const MemberQuerySchema = z
  .object({
    /** Matches the name or email (case-insensitive substring), or the exact member id. */
    q: z.string().trim().max(200).optional(),
    tier: TierSchema.optional(),
    status: z.enum(['active', 'suspended']).optional(),
    /** Cursor: the `next_after` of the previous page. */
    after: z.string().min(1).max(100).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
export type MemberQuery = z.infer<typeof MemberQuerySchema>;

export const CreateMemberRequestSchema = z
  .object({
    name: z.string().trim().min(1).max(200),
    email: z.string().trim().toLowerCase().max(320).email().optional(),
    tier: TierSchema,
    billing_anchor: Anchor.optional(),
  })
  .strict()
  .meta({ id: 'CreateMemberRequest' });
export type CreateMemberRequest = z.infer<typeof CreateMemberRequestSchema>;

export const UpdateMemberRequestSchema = z
  .object({
    tier: TierSchema.optional(),
    billing_anchor: Anchor.optional(),
    suspended: z.boolean().optional(),
    /** Log the member's request and response bodies (docs/adr/0110-request-log.md; off by default). */
    log_bodies: z.boolean().optional(),
  })
  .strict()
  .refine(
    (v) =>
      v.tier !== undefined ||
      v.billing_anchor !== undefined ||
      v.suspended !== undefined ||
      v.log_bodies !== undefined,
    {
      message: 'give `tier`, `billing_anchor`, `suspended` and/or `log_bodies`',
      path: ['tier'],
    },
  )
  .meta({ id: 'UpdateMemberRequest' });
export type UpdateMemberRequest = z.infer<typeof UpdateMemberRequestSchema>;

/**
 * A member's own limits: today its monthly budget in dollars (`member_per_month`; null: no budget,
 * whatever its tier says). PUT /admin/members/{id}/limits with `limits: null` returns it to its tier's.
 */
export const MemberLimitsSchema = z
  .strictObject({
    budget: z.strictObject({ member_per_month: MoneySchema.nullable() }),
  })
  .meta({ id: 'MemberLimits' });
export type MemberLimits = z.infer<typeof MemberLimitsSchema>;

export const SetMemberLimitsRequestSchema = z
  .object({ limits: MemberLimitsSchema.nullable() })
  .strict()
  .meta({ id: 'SetMemberLimitsRequest' });

export const AdminMemberSchema = z
  .object({
    object: z.literal('member'),
    id: z.string(),
    name: z.string(),
    email: z.string().nullable(),
    tier: TierSchema,
    billing_anchor: z.number().int(),
    suspended: z.boolean(),
    created_at: z.number().int(),
    keys: z.number().int().optional(),
    /** The member's own limits (its budget); null: its tier's. */
    limits: MemberLimitsSchema.nullable().optional(),
    /** GET /admin/members/{id} only: the tier's budgets, what "inherited from tier" means. */
    tier_limits: LimitsOverrideSchema.optional(),
    /** Whether the member's request and response bodies are logged (docs/adr/0110-request-log.md). */
    log_bodies: z.boolean().optional(),
  })
  .meta({ id: 'AdminMember' });
export type AdminMember = z.infer<typeof AdminMemberSchema>;

export const AdminKeySchema = z
  .object({
    object: z.literal('api_key'),
    id: z.string(),
    member_id: z.string(),
    name: z.string(),
    prefix: z.string(),
    created_at: z.number().int(),
    last_used_at: z.number().int().nullable(),
    revoked_at: z.number().int().nullable(),
    limits: LimitsOverrideSchema.nullable(),
    /** Unix seconds after which the key answers 401 key_expired (null: never). */
    expires_at: z.number().int().nullable(),
    allowed_models: z.array(z.string()),
    allowed_ips: z.array(z.string()),
    /** Unix seconds of the last rotation (null: never rotated); the id stays the same across them. */
    rotated_at: z.number().int().nullable(),
    /** Unix seconds until which the previous secret keeps working (null: none does). */
    old_secret_valid_until: z.number().int().nullable(),
  })
  .meta({ id: 'AdminKey' });
export type AdminKey = z.infer<typeof AdminKeySchema>;

/**
 * A key's lifecycle as the admin API takes it: `expires_at` (ISO 8601 or unix seconds; null: never,
 * a past time expires the key now) or `expires_in` (a duration: `30d`, `12h`), `allowed_models`
 * (empty: all its tier reaches), `allowed_ips` (CIDR blocks or addresses, IPv4 or IPv6; empty: any).
 */
const KeyLifecycleFields = {
  expires_at: z
    .union([
      z.iso.datetime({ offset: true }),
      z.number().int().min(0).max(32503680000).describe('unix seconds'),
    ])
    .nullable()
    .optional(),
  expires_in: z
    .string()
    .refine((v) => parseDuration(v) !== null, 'must be a duration such as 90m, 24h, 30d')
    .optional(),
  allowed_models: z.array(z.string().trim().min(1).max(200)).max(200).optional(),
  allowed_ips: z
    .array(z.string().refine((v) => parseCidr(v) !== null, 'must be a CIDR block or an IP address'))
    .max(200)
    .optional(),
};
const oneExpiry = (v: { expires_at?: unknown; expires_in?: unknown }) =>
  v.expires_at === undefined || v.expires_in === undefined;
const ONE_EXPIRY = { message: 'give expires_at or expires_in, not both', path: ['expires_in'] };

export const MintKeyRequestSchema = z
  .object({ name: z.string().trim().min(1).max(100).default('default'), ...KeyLifecycleFields })
  .strict()
  .refine(oneExpiry, ONE_EXPIRY)
  .meta({ id: 'MintKeyRequest' });

export const UpdateKeyRequestSchema = z
  .object(KeyLifecycleFields)
  .strict()
  .refine(oneExpiry, ONE_EXPIRY)
  .meta({ id: 'UpdateKeyRequest' });
export type UpdateKeyRequest = z.infer<typeof UpdateKeyRequestSchema>;

/** `grace`: how long the old secret keeps working (a duration; default 24h, `0` revokes it now). */
export const RotateKeyRequestSchema = z
  .object({
    grace: z
      .string()
      .refine((v) => parseDuration(v) !== null, 'must be a duration such as 0, 15m, 24h')
      .default('24h'),
  })
  .strict()
  .meta({ id: 'RotateKeyRequest' });

export const MintedKeySchema = z
  .object({ object: z.literal('api_key.secret'), key: z.string(), record: AdminKeySchema })
  .meta({ id: 'MintedKey' });
export type MintedKey = z.infer<typeof MintedKeySchema>;

/** `limits: null` clears the key's overrides (back to the tier's limits). */
export const SetKeyLimitsRequestSchema = z
  .object({ limits: LimitsOverrideSchema.nullable() })
  .strict()
  .meta({ id: 'SetKeyLimitsRequest' });

export const UpdateModelRequestSchema = z
  .object({
    enabled: z.boolean().optional(),
    /** Log the request and response bodies of the model's calls (docs/adr/0110-request-log.md). */
    log_bodies: z.boolean().optional(),
  })
  .strict()
  .refine((v) => v.enabled !== undefined || v.log_bodies !== undefined, {
    message: 'give `enabled` and/or `log_bodies`',
    path: ['enabled'],
  })
  .meta({ id: 'UpdateModelRequest' });

// ---- queues (console page 5) ----

export const QueueJobStateSchema = z.enum(['failed', 'waiting', 'active', 'delayed', 'completed']);
export const QueueJobsQuerySchema = z
  .object({
    state: QueueJobStateSchema.default('failed'),
    start: z.coerce.number().int().min(0).max(1_000_000).default(0),
    limit: z.coerce.number().int().min(1).max(100).default(20),
  })
  .strict();

export const QueueJobSchema = z
  .object({
    object: z.literal('queue.job'),
    id: z.string(),
    name: z.string(),
    queue: z.string(),
    state: z.string(),
    attempts_made: z.number().int(),
    failed_reason: z.string().nullable(),
    /** The failure in words: the API error a worker left (status, code, message), or the raw reason. */
    error: z
      .object({ message: z.string(), code: z.string().nullable(), status: z.number().int().nullable() })
      .nullable(),
    /**
     * Whether a retry can succeed: false when the failure is final (a client error, a timeout, a
     * cancel: the worker gave up before its attempts ran out), and for a job that has not failed.
     */
    retryable: z.boolean(),
    created_at: z.number().int().describe('Unix milliseconds'),
    finished_at: z.number().int().nullable(),
  })
  .meta({ id: 'QueueJob' });
export type QueueJobView = z.infer<typeof QueueJobSchema>;

// ---- usage rollups (console pages 1, 2 and 6) ----

const Day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a day, YYYY-MM-DD');
export const DailyUsageQuerySchema = z
  .object({
    /** First UTC day (inclusive); default 29 days before `to`. */
    from: Day.optional(),
    /** Last UTC day (inclusive); default today. */
    to: Day.optional(),
    member: z.string().min(1).max(100).optional(),
    key: z.string().min(1).max(100).optional(),
    model: z.string().min(1).max(200).optional(),
    /** What each row is per, besides the day: `model` (default), `member`, `key` or `none`. */
    group_by: z.enum(['model', 'member', 'key', 'none']).default('model'),
    /** Only the `top` groups with the most tokens over the range (default 50). */
    top: z.coerce.number().int().min(1).max(500).default(50),
  })
  .strict();

export const DailyUsageRowSchema = z.object({
  day: z.string(),
  model: z.string().optional(),
  member_id: z.string().optional(),
  key_id: z.string().optional(),
  requests: z.number().int(),
  errors: z.number().int(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  /** Dollars, an exact decimal string (docs/adr/0101-money.md). */
  cost: z.string(),
  /** Names beside the ids (group_by member / key). */
  member_name: z.string().optional(),
  key_name: z.string().optional(),
  key_prefix: z.string().optional(),
});
export type DailyUsageRow = z.infer<typeof DailyUsageRowSchema>;
export const DailyUsageSchema = z
  .object({
    object: z.literal('usage.daily'),
    from: z.string(),
    to: z.string(),
    data: z.array(DailyUsageRowSchema),
  })
  .meta({ id: 'DailyUsage' });
export type DailyUsage = z.infer<typeof DailyUsageSchema>;

export const HourlyUsageQuerySchema = z
  .object({
    hours: z.coerce
      .number()
      .int()
      .min(1)
      .max(24 * 31)
      .default(24),
  })
  .strict();
export const HourlyUsageRowSchema = z.object({
  hour: z.number().int().describe('Unix seconds of the hour start'),
  model: z.string(),
  requests: z.number().int(),
  errors: z.number().int(),
  total_tokens: z.number().int(),
  avg_latency_ms: z.number(),
});
export type HourlyUsageRow = z.infer<typeof HourlyUsageRowSchema>;
export const HourlyUsageSchema = z
  .object({ object: z.literal('usage.hourly'), data: z.array(HourlyUsageRowSchema) })
  .meta({ id: 'HourlyUsage' });
export type HourlyUsage = z.infer<typeof HourlyUsageSchema>;

// ---- keys across members (console page 3) ----

/** PostgreSQL text cannot hold NUL: refused as bad input, never sent to the database. */
const NoNul = (s: z.ZodString) => s.refine((v) => !v.includes('\u0000'), 'must not contain NUL characters');

export const KeyQuerySchema = z
  .object({
    /** Matches the key's name, display prefix or id, or its member's name or email (case-insensitive). */
    q: NoNul(z.string().trim().max(200)).optional(),
    /** Only the keys of this member. */
    member: NoNul(z.string().min(1).max(100)).optional(),
    status: z.enum(['active', 'revoked']).optional(),
    /** `newest` (default) or `expiring`: active keys with an expiry, expiring soonest first. */
    sort: z.enum(['newest', 'expiring']).default('newest'),
    /** Cursor: the `next_after` of the previous page. */
    after: NoNul(z.string().min(1).max(100)).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
export type KeyQuery = z.infer<typeof KeyQuerySchema>;

export const AdminKeyListItemSchema = AdminKeySchema.extend({
  member: z.object({ id: z.string(), name: z.string(), tier: TierSchema, suspended: z.boolean() }),
}).meta({ id: 'AdminKeyListItem' });
export type AdminKeyListItem = z.infer<typeof AdminKeyListItemSchema>;

export const AdminKeyListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(AdminKeyListItemSchema),
    next_after: z.string().nullable(),
  })
  .meta({ id: 'AdminKeyList' });
export type AdminKeyList = z.infer<typeof AdminKeyListSchema>;

// ---- a member's quotas (member detail) ----

export const MemberQuotasSchema = z
  .object({
    object: z.literal('member.quotas'),
    member_id: z.string(),
    enabled: z.boolean(),
    at: z.number().int(),
    /** The member's own counters: token allowances (month or billing period), images per month. */
    member: z.array(LimitStateSchema),
    /** Per active key: its quotas (rolling token budgets, web searches per day). */
    keys: z.array(
      z.object({ id: z.string(), prefix: z.string(), name: z.string(), quotas: z.array(LimitStateSchema) }),
    ),
    /** Keys left out (only the newest active keys are read). */
    keys_omitted: z.number().int(),
  })
  .meta({ id: 'MemberQuotas' });
export type MemberQuotas = z.infer<typeof MemberQuotasSchema>;

// ---- queues: one job, pause/resume ----

export const QueueJobDetailSchema = QueueJobSchema.extend({
  /** The job's data, summarised: each field's type and size, short strings and numbers as they are. */
  data_summary: z.record(z.string(), z.string()),
  attempts_allowed: z.number().int(),
  processed_at: z.number().int().nullable(),
  /** The last lines of the stack traces of its failed attempts (no more than 3). */
  stacktrace: z.array(z.string()),
  progress: z.unknown(),
}).meta({ id: 'QueueJobDetail' });
export type QueueJobDetail = z.infer<typeof QueueJobDetailSchema>;

export const QueuePausedSchema = z
  .object({ object: z.literal('queue'), name: z.string(), paused: z.boolean() })
  .meta({ id: 'QueuePaused' });

// ---- live overview (console page 1) ----

export const OverviewQuerySchema = z
  .object({ minutes: z.coerce.number().int().min(5).max(120).default(60) })
  .strict();

export const OverviewModelSchema = z.object({
  model: z.string(),
  requests: z.number().int(),
  errors: z.number().int(),
  tokens: z.number().int(),
  /** Latency percentiles over the window (ms; the upper bound of the histogram bucket). */
  p50_ms: z.number().nullable(),
  p99_ms: z.number().nullable(),
  /** Per minute, oldest first (one entry per minute of the window). */
  requests_per_min: z.array(z.number().int()),
  tokens_per_min: z.array(z.number().int()),
  p50_per_min: z.array(z.number().nullable()),
  p99_per_min: z.array(z.number().nullable()),
});
export type OverviewModel = z.infer<typeof OverviewModelSchema>;

export const OverviewInstanceSchema = z.object({
  instance: z.string(),
  service: z.string(),
  version: z.string(),
  host: z.string(),
  inflight: z.number().int(),
  load: z.number(),
  rss: z.number().int(),
  uptime_s: z.number().int(),
  last_seen_ms: z.number().int(),
  /** up: ready; degraded: it answers but a readiness check fails; down: stopped or silent. */
  state: z.enum(['up', 'degraded', 'down']),
  /** Why it is degraded or down (the failing readiness checks, stopped, silent since ...); null when up. */
  reason: z.string().nullable(),
  /** Its readiness checks (what its /readyz says), by name: true when passing. */
  checks: z.record(z.string(), z.boolean()),
  /** Unix milliseconds since when it is in this state. */
  since: z.number().int(),
});

export const OverviewBackingSchema = z.object({
  name: z.enum(['postgresql', 'redis', 'nats']),
  up: z.boolean(),
  /** Round trip of the check from the gateway that answered (ms); null when it failed. */
  latency_ms: z.number().nullable(),
  reason: z.string().nullable(),
  checked_at: z.number().int().describe('Unix milliseconds'),
  /** Instances whose own readiness check of this server fails now (e.g. `nats` of a chat-service). */
  failing_instances: z.array(z.string()),
});

export const OverviewAlertSchema = z.object({
  alert: z.string(),
  severity: z.enum(['critical', 'warning']),
  /** pending: the rule's expression holds, not yet for its `for`; firing: it has. */
  state: z.enum(['firing', 'pending']),
  labels: z.record(z.string(), z.string()),
  since: z.number().int().describe('Unix milliseconds: firing since, or pending since'),
  value: z.number().nullable(),
  summary: z.string(),
});
export type OverviewAlert = z.infer<typeof OverviewAlertSchema>;

export const OverviewSchema = z
  .object({
    object: z.literal('overview'),
    at: z.number().int().describe('Unix milliseconds'),
    minutes: z.number().int(),
    /** Start of each minute of the window (Unix seconds), oldest first. */
    minute_starts: z.array(z.number().int()),
    totals: z.object({
      requests: z.number().int(),
      errors: z.number().int(),
      tokens: z.number().int(),
      /** Over the last full minute. */
      requests_per_s: z.number(),
      /** Every answer >= 400 over the requests: client errors, refusals and server errors together. */
      error_rate: z.number().nullable(),
      /** 4xx answers other than refusals (a client's mistake: the platform is fine). */
      client_error_rate: z.number().nullable(),
      /** Refusals by a limit or an allowance (429, 402): the platform working as configured. */
      refusal_rate: z.number().nullable(),
      /** 5xx answers: the platform failed. */
      server_error_rate: z.number().nullable(),
      requests_per_min: z.array(z.number().int()),
      errors_per_min: z.array(z.number().int()),
      client_errors_per_min: z.array(z.number().int()),
      refusals_per_min: z.array(z.number().int()),
      server_errors_per_min: z.array(z.number().int()),
    }),
    models: z.array(OverviewModelSchema),
    /** Requests being handled by all gateway replicas now (sum of their latest status). */
    inflight: z.number().int(),
    instances: z.array(OverviewInstanceSchema),
    queues: z.array(
      z.object({ name: z.string(), paused: z.boolean(), counts: z.record(z.string(), z.number().int()) }),
    ),
    /** PostgreSQL, Redis and NATS as the answering gateway reaches them (its /readyz checks). */
    backing: z.array(OverviewBackingSchema),
    alerts: z.object({
      /** console: the shipped PrometheusRule evaluated by the gateways; alertmanager: ALERTMANAGER_URL. */
      source: z.enum(['console', 'alertmanager']),
      /** Alertmanager could not be read (the console's own evaluation is shown instead); else null. */
      error: z.string().nullable(),
      /** Firing first, then pending; critical first. */
      active: z.array(OverviewAlertSchema),
      /** Rules of the file the console cannot evaluate (they need Prometheus); empty from Alertmanager. */
      not_evaluated: z.array(z.string()),
    }),
    /** The answer to "is the platform healthy": down, degraded or healthy, and why. */
    health: z.object({
      status: z.enum(['healthy', 'degraded', 'down']),
      problems: z.array(z.string()),
    }),
    ledger: z.object({
      /** Events in the stream not yet delivered to the ledger writer. */
      pending: z.number().int().nullable(),
      /** Delivered, not yet written and acknowledged. */
      ack_pending: z.number().int().nullable(),
      /** Age of the oldest event not yet written (ms), null when none waits. */
      oldest_ms: z.number().int().nullable(),
      error: z.string().nullable(),
    }),
  })
  .meta({ id: 'Overview' });
export type Overview = z.infer<typeof OverviewSchema>;

/** GET /admin/logs: the request log, newest first (keyset paging with `before`). */
export const RequestLogQuerySchema = z
  .object({
    member: z.string().min(1).max(200).optional(),
    key: z.string().min(1).max(200).optional(),
    model: z.string().min(1).max(200).optional(),
    /** A status family (2xx, 4xx, 5xx) or a refusal status (429, 402). */
    status: z.enum(['2xx', '4xx', '5xx', '429', '402']).optional(),
    code: z
      .string()
      .regex(/^[a-z0-9_]+$/)
      .max(100)
      .optional(),
    from: z.coerce.date().optional(),
    to: z.coerce.date().optional(),
    /** The requests of one trace: its W3C trace id (32 hex digits, as the log and trace viewers show it). */
    trace_id: z
      .string()
      .regex(/^[0-9a-f]{32}$/i, 'a trace id is 32 hexadecimal digits')
      .transform((t) => t.toLowerCase())
      .optional(),
    /** Cursor: the `next_before` of the previous page (opaque). */
    before: z
      .string()
      .regex(/^\d{1,15}\.[A-Za-z0-9_-]{1,300}$/)
      .optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
export type RequestLogQueryParams = z.infer<typeof RequestLogQuerySchema>;

export const RequestLogEntrySchema = z
  .object({
    at: z.number().int().describe('Unix milliseconds when the request was answered'),
    request_id: z.string(),
    member_id: z.string(),
    key_id: z.string(),
    model: z.string().nullable().describe('Null when the request was refused before a model was resolved'),
    endpoint: z.string(),
    status: z.number().int(),
    error_code: z.string().nullable(),
    limit: z.string().nullable().describe('The limit that refused it (`key.requests_per_minute` ...)'),
    refused: z.boolean().describe('Refused before it reached a model (no usage)'),
    batch: z.boolean(),
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    latency_ms: z.number().int(),
    first_token_ms: z.number().int().nullable(),
    trace_id: z.string().nullable(),
    trace_url: z
      .string()
      .nullable()
      .describe(
        "The trace in the operator's trace viewer (TRACE_URL_TEMPLATE); null without a template or trace",
      ),
    cost: z
      .string()
      .nullable()
      .describe('What the request cost, in dollars as a decimal string (null: refused before it ran)'),
    engine_endpoint: z.string().nullable().describe('Not recorded yet: null'),
  })
  .meta({ id: 'RequestLogEntry' });
export type RequestLogEntry = z.infer<typeof RequestLogEntrySchema>;

/** A logged request's bodies (request_log_body), redacted and capped by the gateway. */
export const RequestLogBodiesSchema = z
  .object({
    request: z.string().nullable().describe('The request body (JSON) as the gateway validated it'),
    response: z
      .string()
      .nullable()
      .describe("The answer: a reply's JSON, a stream's frames one per line, or the error"),
    request_truncated: z.boolean().describe('Cut at REQUEST_LOG_BODY_MAX_BYTES'),
    response_truncated: z.boolean(),
  })
  .meta({ id: 'RequestLogBodies' });
export type RequestLogBodies = z.infer<typeof RequestLogBodiesSchema>;

/** One request with its bodies when they were logged (GET /admin/logs/{requestId}). */
export const RequestLogDetailSchema = RequestLogEntrySchema.extend({
  bodies: RequestLogBodiesSchema.nullable().describe(
    'Null: body logging was off for its member and model, or the bodies are past REQUEST_LOG_BODY_RETENTION_DAYS',
  ),
}).meta({ id: 'RequestLogDetail' });
export type RequestLogDetail = z.infer<typeof RequestLogDetailSchema>;

export const RequestLogListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(RequestLogEntrySchema),
    next_before: z.string().nullable(),
  })
  .meta({ id: 'RequestLogList' });
export type RequestLogList = z.infer<typeof RequestLogListSchema>;

export const MemberRefusalsSchema = z
  .object({
    object: z.literal('list'),
    member_id: z.string(),
    data: z.array(
      z.object({
        limit: z.string(),
        error_code: z.string().nullable(),
        last_hour: z.number().int(),
        last_day: z.number().int(),
        last_at: z.number().int().describe('Unix milliseconds of the last refusal by this limit'),
        last_key_id: z.string().describe('The key of the last refusal by this limit'),
      }),
    ),
  })
  .meta({ id: 'MemberRefusals' });
export type MemberRefusals = z.infer<typeof MemberRefusalsSchema>;

/** GET /admin/members/{id}/stored-responses: how many stored responses (unexpired) the member has. */
export const MemberStoredResponsesSchema = z
  .object({
    object: z.literal('member.stored_responses'),
    member_id: z.string(),
    count: z.number().int().min(0),
  })
  .meta({ id: 'MemberStoredResponses' });
export type MemberStoredResponses = z.infer<typeof MemberStoredResponsesSchema>;

/** DELETE /admin/members/{id}/stored-responses: how many were purged. */
export const StoredResponsesPurgedSchema = z
  .object({
    object: z.literal('member.stored_responses.purged'),
    member_id: z.string(),
    deleted: z.number().int().min(0),
  })
  .meta({ id: 'StoredResponsesPurged' });
export type StoredResponsesPurged = z.infer<typeof StoredResponsesPurgedSchema>;

// ---- alerts (budget and allowance thresholds, ADR 0101) ----

export const AlertQuerySchema = z
  .object({
    member: NoNul(z.string().min(1).max(100)).optional(),
    status: z.enum(['pending', 'delivered', 'failed', 'unsent']).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50),
  })
  .strict();

export const AlertDeliverySchema = z.object({
  attempt: z.number().int(),
  /** Unix seconds of the attempt. */
  at: z.number().int(),
  url: z.string(),
  /** The receiver's HTTP status (null: no answer: refused, timed out). */
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number().int(),
});

export const AdminAlertSchema = z
  .object({
    id: z.string(),
    object: z.literal('alert'),
    /** Unix seconds when the threshold was passed. */
    created_at: z.number().int(),
    /** Whose counter: the member's or one key's. */
    scope: z.enum(['member', 'key']),
    member_id: z.string(),
    /** The member's name (null: deleted since). */
    member_name: z.string().nullable(),
    key_id: z.string().nullable(),
    key_prefix: z.string().nullable(),
    key_name: z.string().nullable(),
    /** The limit or budget (`member.budget_per_month`, `models.chat-A.allowance_tokens` ...). */
    limit: z.string(),
    threshold_percent: z.number().int(),
    unit: z.enum(['usd', 'tokens']),
    /** Dollars as a decimal string (unit usd) or tokens. */
    used: z.union([z.string(), z.number()]),
    limit_value: z.union([z.string(), z.number()]),
    period: z.object({ id: z.string(), start: z.number().int(), end: z.number().int() }),
    /** pending (to deliver), delivered, failed (gave up after its attempts), unsent (no webhook). */
    status: z.enum(['pending', 'delivered', 'failed', 'unsent']),
    attempts: z.number().int(),
    delivered_at: z.number().int().nullable(),
    /** Unix seconds of the next delivery attempt (null: none will be made). */
    next_retry_at: z.number().int().nullable(),
    /** The last attempt's error (null: none, or delivered). */
    last_error: z.string().nullable(),
    deliveries: z.array(AlertDeliverySchema),
  })
  .meta({ id: 'AdminAlert' });
export type AdminAlert = z.infer<typeof AdminAlertSchema>;

export const AdminAlertListSchema = z
  .object({ object: z.literal('list'), data: z.array(AdminAlertSchema) })
  .meta({ id: 'AdminAlertList' });
export type AdminAlertList = z.infer<typeof AdminAlertListSchema>;

/** One engine endpoint of a model, merged over the service replicas that route to it. */
export const ModelEndpointSchema = z.object({
  url: z.string(),
  /** The worst over the replicas: cooling, then recovering, then up. */
  state: z.enum(['up', 'recovering', 'cooling']),
  /** Requests on it now, summed over the replicas. */
  inflight: z.number().int().min(0),
  /** Concurrent requests it may take, summed over the replicas (each caps its own). */
  capacity: z.number().int().min(0),
  /** The highest over the replicas. */
  consecutive_failures: z.number().int().min(0),
  /** ISO time the latest cooldown ends; null when no replica cools it. */
  cooldown_until: z.string().nullable(),
  /** Since each replica started, summed. */
  requests: z.number().int().min(0),
  errors: z.number().int().min(0),
  /** The most recent error any replica saw, and when (ISO). */
  last_error: z.string().nullable(),
  last_error_at: z.string().nullable(),
  /**
   * Reported by the engine on its Prometheus /metrics (the pool's `metrics_path`; vLLM's or SGLang's names), from
   * the replica that read it last (they all read the same engine); null when the engine reports nothing
   * (no /metrics, neither vLLM nor SGLang, not an HTTP chat engine). The prefix-cache hit rate is over about the last
   * minute (the lifetime rate when the engine had no lookups in it), 0..1.
   */
  cache_hit_rate: z.number().min(0).max(1).nullable(),
  /** Share of the engine's KV cache in use, 0..1. */
  kv_cache_usage: z.number().min(0).max(1).nullable(),
  /** Requests waiting and running in the engine's own scheduler (all its clients). */
  requests_waiting: z.number().int().min(0).nullable(),
  requests_running: z.number().int().min(0).nullable(),
  /** When those were read (ISO); null when not reported. */
  metrics_at: z.string().nullable(),
  /** Replicas routing to this endpoint. */
  replicas: z.number().int().min(0),
});
export type ModelEndpoint = z.infer<typeof ModelEndpointSchema>;

/**
 * GET /admin/models/pools: the engine pools of the service replicas that answered within the window
 * (their ops status document `engine-pools` over NATS), per model, with what each engine reports on
 * its /metrics (prefix-cache hit rate, queue, KV cache) where it does.
 */
export const ModelPoolsSchema = z
  .object({
    object: z.literal('list'),
    /** Service replicas that answered. */
    replicas: z.number().int().min(0),
    data: z.array(
      z.object({
        model: z.string(),
        routing: z.string(),
        /** Requests waiting for an endpoint, summed over the replicas and classes. */
        queued: z.number().int().min(0),
        endpoints: z.array(ModelEndpointSchema),
      }),
    ),
  })
  .meta({ id: 'ModelPools' });
export type ModelPools = z.infer<typeof ModelPoolsSchema>;
