import { z } from 'zod';
import { TierSchema } from './catalog.js';
import { OperatorPasswordSchema } from './console.js';
import { parseDuration } from './key-lifecycle.js';
import { LimitStateSchema } from './limits.js';

/**
 * Members' own accounts (issue 41): invitations (made by operators), the account pages' API under
 * /account/api/ (a member's session, never an operator's) and GET /v1/usage (API-key auth).
 */

const Email = z.string().trim().toLowerCase().max(320).email();
const Duration = (example: string) =>
  z
    .string()
    .refine(
      (v) => parseDuration(v) !== null && parseDuration(v) !== 0,
      `must be a duration such as ${example}`,
    );

// ---- invitations (operators: POST /admin/members/{id}/invitations, `admin member invite`) ----

/** `email`: the member's sign-in email (set on the member); `expires_in`: default MEMBER_INVITE_TTL. */
export const MemberInviteRequestSchema = z
  .object({ email: Email.optional(), expires_in: Duration('72h, 7d').optional() })
  .strict()
  .meta({ id: 'MemberInviteRequest' });
export type MemberInviteRequest = z.infer<typeof MemberInviteRequestSchema>;

export const MemberInvitationSchema = z
  .object({
    object: z.literal('member_invitation'),
    member_id: z.string(),
    email: z.string(),
    /** The one-time link where the member sets their password (shown this once). */
    url: z.string(),
    /** Unix seconds after which the link no longer works. */
    expires_at: z.number().int(),
  })
  .meta({ id: 'MemberInvitation' });
export type MemberInvitationView = z.infer<typeof MemberInvitationSchema>;

// ---- the account pages' API (/account/api/...) ----

/** GET /account/api/invitation?token=: who the link is for, before the password is set. */
export const InvitationPreviewSchema = z
  .object({
    object: z.literal('member_invitation.preview'),
    name: z.string(),
    email: z.string(),
    expires_at: z.number().int(),
  })
  .meta({ id: 'InvitationPreview' });
export type InvitationPreview = z.infer<typeof InvitationPreviewSchema>;

export const AcceptInvitationRequestSchema = z
  .object({ token: z.string().min(1).max(200), password: OperatorPasswordSchema })
  .strict()
  .meta({ id: 'AcceptInvitationRequest' });

export const AccountLoginRequestSchema = z
  .object({ email: Email, password: z.string().min(1).max(1024) })
  .strict()
  .meta({ id: 'AccountLoginRequest' });

export const AccountMemberSchema = z
  .object({
    object: z.literal('member'),
    id: z.string(),
    name: z.string(),
    email: z.string().nullable(),
    tier: TierSchema,
    /** The models the tier reaches, most capable first, with the endpoints each one serves. */
    models: z.array(z.object({ id: z.string(), kind: z.string(), endpoints: z.array(z.string()) })),
  })
  .meta({ id: 'AccountMember' });
export type AccountMember = z.infer<typeof AccountMemberSchema>;

export const AccountSessionSchema = z
  .object({
    object: z.literal('account_session'),
    member: AccountMemberSchema,
    /** Send back as `X-CSRF-Token` on every POST/DELETE made with the session cookie. */
    csrf_token: z.string(),
    idle_timeout_s: z.number().int(),
    /** The base URL clients use (`https://api.example.com/v1`), for the "use it" snippets. */
    api_base_url: z.string(),
  })
  .meta({ id: 'AccountSession' });
export type AccountSessionView = z.infer<typeof AccountSessionSchema>;

export const AccountKeySchema = z
  .object({
    object: z.literal('api_key'),
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    created_at: z.number().int(),
    last_used_at: z.number().int().nullable(),
    revoked_at: z.number().int().nullable(),
    expires_at: z.number().int().nullable(),
    /** Models the key may call (empty: every model of the tier). */
    allowed_models: z.array(z.string()),
    rotated_at: z.number().int().nullable(),
    old_secret_valid_until: z.number().int().nullable(),
  })
  .meta({ id: 'AccountKey' });
export type AccountKey = z.infer<typeof AccountKeySchema>;

export const AccountKeyListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(AccountKeySchema),
    /** Keys neither revoked nor expired, and how many the member may have (MEMBER_MAX_KEYS). */
    live: z.number().int(),
    max_live: z.number().int(),
  })
  .meta({ id: 'AccountKeyList' });
export type AccountKeyList = z.infer<typeof AccountKeyListSchema>;

export const CreateAccountKeyRequestSchema = z
  .object({
    name: z.string().trim().min(1).max(100),
    /** A duration (`30d`), or omit: the key never expires. */
    expires_in: Duration('30d, 90d').optional(),
  })
  .strict()
  .meta({ id: 'CreateAccountKeyRequest' });
export type CreateAccountKeyRequest = z.infer<typeof CreateAccountKeyRequestSchema>;

export const AccountMintedKeySchema = z
  .object({ object: z.literal('api_key.secret'), key: z.string(), record: AccountKeySchema })
  .meta({ id: 'AccountMintedKey' });
export type AccountMintedKey = z.infer<typeof AccountMintedKeySchema>;

// ---- usage of the current period (GET /v1/usage and GET /account/api/usage) ----

export const UsageTotalsSchema = z
  .object({
    requests: z.number().int(),
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    /** What these requests cost, in dollars as an exact decimal string (stored with each request at the prices then). */
    cost: z.string(),
  })
  .meta({ id: 'UsageTotals' });
export type UsageTotals = z.infer<typeof UsageTotalsSchema>;

export const UsageDayRowSchema = UsageTotalsSchema.extend({
  /** UTC day, YYYY-MM-DD. */
  day: z.string(),
  model: z.string(),
}).meta({ id: 'UsageDayRow' });

export const SelfUsageSchema = z
  .object({
    object: z.literal('usage'),
    /** Unix seconds of this answer. */
    at: z.number().int(),
    /**
     * The member's current billing period (unix seconds, end exclusive): monthly allowances reset at
     * its end. Usage below counts the UTC days this period touches.
     */
    period: z.object({ start: z.number().int(), end: z.number().int() }),
    /** The currency of every `cost` and of the budgets' dollar figures. */
    currency: z.literal('usd'),
    member: z.object({ id: z.string(), tier: TierSchema, usage: UsageTotalsSchema }),
    /** The calling key (GET /v1/usage); null on the account page, which shows the member's keys together. */
    key: z
      .object({ id: z.string(), name: z.string(), prefix: z.string(), usage: UsageTotalsSchema })
      .nullable(),
    /** The member's usage per UTC day and model in this period (all their keys). */
    daily: z.array(UsageDayRowSchema),
    /**
     * Every limit of the key and of its member right now: used, remaining and when it resets (rate
     * limits per minute or day, quotas, the monthly allowance, the money budgets in `nano_usd`). Empty
     * when limits are off.
     */
    limits: z.array(LimitStateSchema),
  })
  .meta({ id: 'Usage' });
export type SelfUsage = z.infer<typeof SelfUsageSchema>;

/** Default lifetime of an invitation link (MEMBER_INVITE_TTL; the admin CLI reads the same variable). */
export const DEFAULT_MEMBER_INVITE_TTL = '72h';

/** The account pages' path (the link of an invitation is `<base>/account/invitation#<token>`). */
export const ACCOUNT_PATH = '/account/';

/** The invitation link for a token: the token rides in the fragment, never sent to any server log. */
export function invitationUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${ACCOUNT_PATH}invitation#token=${token}`;
}
