import { z } from 'zod';
import { TierSchema } from './catalog.js';
import { LimitsOverrideSchema } from './limits.js';

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
  })
  .strict()
  .refine((v) => v.tier !== undefined || v.billing_anchor !== undefined || v.suspended !== undefined, {
    message: 'give `tier`, `billing_anchor` and/or `suspended`',
    path: ['tier'],
  })
  .meta({ id: 'UpdateMemberRequest' });
export type UpdateMemberRequest = z.infer<typeof UpdateMemberRequestSchema>;

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
  })
  .meta({ id: 'AdminKey' });
export type AdminKey = z.infer<typeof AdminKeySchema>;

export const MintKeyRequestSchema = z
  .object({ name: z.string().trim().min(1).max(100).default('default') })
  .strict()
  .meta({ id: 'MintKeyRequest' });

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
  .object({ enabled: z.boolean() })
  .strict()
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
