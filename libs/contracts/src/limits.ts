import { z } from 'zod';
import { TierSchema } from './catalog.js';
import { MoneySchema } from './pricing.js';

/**
 * Limits and quotas of the spec ("Limits" table), as configuration. The spec's numbers are the
 * defaults (DEFAULT_LIMITS); a limits file (gateway env LIMITS_FILE) overrides them, per tier under
 * `tiers:`, and each API key may carry its own overrides (ApiKey.limits, set with the admin CLI).
 * Overrides are deep-merged in that order: defaults < file < file.tiers[tier] < key overrides.
 *
 * In every numeric field `null` means "no such limit".
 */
const Count = z.number().int().min(0);

/** Limits of one model, per API key unless said otherwise. */
export const ModelLimitsSchema = z.strictObject({
  /**
   * Requests per minute on this model. Absent: the key-wide bucket (`key.requests_per_minute`,
   * shared with the other model endpoints). A number: this model's own per-key bucket instead of
   * the key-wide one (rerank: 1000). null: no per-minute rate at all (chat-G).
   */
  requests_per_minute: Count.nullable().optional(),
  /** Tokens per minute on this model (chat-A/B/E/F: 1.5M). Charged with the real usage. */
  tokens_per_minute: Count.nullable().optional(),
  /** Concurrent requests on this model, on top of the key-wide `key.concurrent` (chat-G: 5). */
  concurrent: Count.nullable().optional(),
  /** A token budget over a rolling window (chat-G: 400M per 4 hours). Exceeded: 429 insufficient_quota. */
  rolling_tokens: z
    .strictObject({
      tokens: Count,
      window_minutes: z
        .number()
        .int()
        .min(1)
        .max(60 * 24 * 31),
    })
    .nullable()
    .optional(),
  /**
   * The member's token allowance per quota period (calendar month, or billing period for chat-G):
   * overrides the catalog's `allowance.tokens`. Spent: 402 monthly_cap_reached.
   */
  allowance_tokens: Count.nullable().optional(),
});
export type ModelLimits = z.infer<typeof ModelLimitsSchema>;

export const KeyLimitsSchema = z.strictObject({
  /** Requests per minute on model endpoints, per key (60). */
  requests_per_minute: Count.nullable(),
  /** Concurrent requests on model endpoints, per key (5). */
  concurrent: Count.nullable(),
});

/** Web search and the MCP tool endpoint: one shared budget per key. */
export const SearchLimitsSchema = z.strictObject({
  requests_per_minute: Count.nullable(),
  concurrent: Count.nullable(),
  /** Per UTC day. Exhausted: 429 insufficient_quota. */
  requests_per_day: Count.nullable(),
});

/** Image endpoints, per member; one request is one use whatever `n` is. Apart from the chat budgets. */
export const ImageLimitsSchema = z.strictObject({
  requests_per_minute: Count.nullable(),
  /** Per calendar month (UTC). Exhausted: 429 quota_exceeded. */
  requests_per_month: Count.nullable(),
});

/**
 * Monthly budgets in dollars (calendar months, UTC), decimal strings (docs/adr/0101-money.md): every
 * request's cost is reserved at admission (its prompt estimate and held output at the model's prices)
 * and settled with the real cost. Spent: 402 budget_exceeded until the next month. null: no budget.
 */
export const BudgetLimitsSchema = z.strictObject({
  /** The member's spend over all its keys (set per member, or for a tier in the limits file). */
  member_per_month: MoneySchema.nullable(),
  /** One key's spend (a key's own override, or for a tier in the limits file). */
  key_per_month: MoneySchema.nullable(),
});

/** The fully resolved limits that apply to one request's key. */
export interface EffectiveLimits {
  key: z.infer<typeof KeyLimitsSchema>;
  models: Record<string, ModelLimits>;
  search: z.infer<typeof SearchLimitsSchema>;
  images: z.infer<typeof ImageLimitsSchema>;
  budget: z.infer<typeof BudgetLimitsSchema>;
}

/** A partial set of limits: what a tier section of the limits file, or a key's overrides, may say. */
export const LimitsOverrideSchema = z.strictObject({
  key: KeyLimitsSchema.partial().optional(),
  models: z.record(z.string().min(1), ModelLimitsSchema).optional(),
  search: SearchLimitsSchema.partial().optional(),
  images: ImageLimitsSchema.partial().optional(),
  budget: BudgetLimitsSchema.partial().optional(),
});
export type LimitsOverride = z.infer<typeof LimitsOverrideSchema>;

/** The limits file (YAML or JSON) named by the gateway's LIMITS_FILE. */
export const LimitsFileSchema = LimitsOverrideSchema.extend({
  /**
   * How long a concurrency slot lives without renewal. A running request renews its slots every
   * third of this; a gateway that dies lets its slots expire after at most this long.
   */
  lease_ttl_ms: z.number().int().min(1000).max(3_600_000).optional(),
  /** Per-tier overrides, merged over the rest of the file. */
  tiers: z.partialRecord(TierSchema, LimitsOverrideSchema).optional(),
});
export type LimitsFile = z.infer<typeof LimitsFileSchema>;

const TPM_1_5M: ModelLimits = { tokens_per_minute: 1_500_000 };

/** The spec's numbers. */
export const DEFAULT_LIMITS: EffectiveLimits = Object.freeze({
  key: { requests_per_minute: 60, concurrent: 5 },
  models: {
    'chat-A': TPM_1_5M,
    'chat-B': TPM_1_5M,
    'chat-E': TPM_1_5M,
    'chat-F': TPM_1_5M,
    rerank: { requests_per_minute: 1000 },
    'chat-G': {
      requests_per_minute: null,
      concurrent: 5,
      rolling_tokens: { tokens: 400_000_000, window_minutes: 240 },
    },
  },
  search: { requests_per_minute: 20, concurrent: 3, requests_per_day: 500 },
  images: { requests_per_minute: 20, requests_per_month: 100 },
  budget: { member_per_month: null, key_per_month: null },
}) as EffectiveLimits;

export const DEFAULT_LEASE_TTL_MS = 30_000;

/**
 * What the limits engine reads as a key's overrides: the key's own (ApiKey.limits), with its member's
 * own limits (Member.limits: the member's budget) over them. Built once per key lookup, not per request.
 */
export function withMemberLimits(key: unknown, member: unknown): Record<string, unknown> | null {
  const k = key && typeof key === 'object' ? (key as Record<string, unknown>) : null;
  const m = member && typeof member === 'object' ? (member as { budget?: unknown }) : null;
  const mb = m?.budget && typeof m.budget === 'object' ? (m.budget as Record<string, unknown>) : null;
  if (!mb || !('member_per_month' in mb)) return k;
  const kb = k?.budget && typeof k.budget === 'object' ? (k.budget as Record<string, unknown>) : {};
  return { ...(k ?? {}), budget: { ...kb, member_per_month: mb.member_per_month } };
}

/** Deep-merges overrides over a base (a later layer wins field by field; `null` is a value). */
export function mergeLimits(
  base: EffectiveLimits,
  ...layers: (LimitsOverride | null | undefined)[]
): EffectiveLimits {
  const out: EffectiveLimits = {
    key: { ...base.key },
    models: { ...base.models },
    search: { ...base.search },
    images: { ...base.images },
    budget: { ...base.budget },
  };
  for (const layer of layers) {
    if (!layer) continue;
    if (layer.budget) Object.assign(out.budget, defined(layer.budget));
    if (layer.key) Object.assign(out.key, defined(layer.key));
    if (layer.search) Object.assign(out.search, defined(layer.search));
    if (layer.images) Object.assign(out.images, defined(layer.images));
    for (const [id, m] of Object.entries(layer.models ?? {}))
      out.models[id] = { ...out.models[id], ...defined(m) };
  }
  return out;
}

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Usage-event endpoints that count against the search budget (rebuilt from the ledger). */
export const SEARCH_ENDPOINTS = ['/v1/search', '/mcp'] as const;
/** Usage-event endpoint prefix of the image endpoints (rebuilt from the ledger). */
export const IMAGE_ENDPOINT_PREFIX = '/v1/images/';

// ---------------------------------------------------------------- admin API responses

export const LimitWindowSchema = z.enum([
  'minute',
  'day',
  'month',
  'billing_period',
  'rolling',
  'concurrent',
]);

/** The current state of one limit of a key (GET /admin/keys/{key}/limits). */
export const LimitStateSchema = z
  .object({
    /** Stable name, e.g. `key.requests_per_minute`, `models.chat-A.tokens_per_minute`. */
    name: z.string(),
    /** Whose counter it is: the key's, or its member's (allowances, images). */
    scope: z.enum(['key', 'member']),
    model: z.string().nullable(),
    /** `nano_usd`: a budget, in nano-dollars (limit, used and remaining; ADR 0101). */
    unit: z.enum(['requests', 'tokens', 'nano_usd']),
    window: LimitWindowSchema,
    limit: z.number().int(),
    used: z.number().int(),
    remaining: z.number().int(),
    /** Unix seconds when the current window ends (rolling: when the oldest counted use drops out). */
    resets_at: z.number().int().nullable(),
    /** What a request gets once the limit is hit. */
    status: z.number().int(),
    code: z.string(),
  })
  .meta({ id: 'LimitState' });
export type LimitState = z.infer<typeof LimitStateSchema>;

export const KeyLimitsStateSchema = z
  .object({
    object: z.literal('limits'),
    key: z.object({ id: z.string(), prefix: z.string(), member_id: z.string(), tier: TierSchema }),
    enabled: z.boolean(),
    /** The key's own overrides (null: none). */
    overrides: LimitsOverrideSchema.nullable(),
    /**
     * What the key's tier gives without any override (the spec's defaults, the limits file and its tier
     * section; a model's allowance from the catalog): what "inherited from tier" means for each field.
     */
    tier_limits: LimitsOverrideSchema,
    /** Unix seconds of the state. */
    at: z.number().int(),
    limits: z.array(LimitStateSchema),
  })
  .meta({ id: 'KeyLimitsState' });
export type KeyLimitsState = z.infer<typeof KeyLimitsStateSchema>;

export const UsageGroupSchema = z.enum(['member', 'key', 'model', 'day']);
export type UsageGroup = z.infer<typeof UsageGroupSchema>;

export const AdminUsageRowSchema = z.object({
  member_id: z.string().optional(),
  /** The member's name (null: deleted since). */
  member_name: z.string().nullable().optional(),
  key_id: z.string().optional(),
  key_name: z.string().nullable().optional(),
  key_prefix: z.string().nullable().optional(),
  model: z.string().optional(),
  /** UTC day, YYYY-MM-DD (group_by day). */
  day: z.string().optional(),
  requests: z.number().int(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  /** Requests that were batch lines. */
  batch_requests: z.number().int(),
  /** Tokens to bill: batch lines' tokens at their model's `batch_price_factor`, the rest in full. */
  billable_tokens: z.number().int(),
  /**
   * What it cost, in dollars, as an exact decimal string (`"12.3456789"`): the sum of each request's
   * cost at the prices of its time, batch lines at their batch price (docs/adr/0101-money.md).
   */
  cost: z.string(),
});

/** GET /admin/usage: ledger totals for a period, grouped by member, key and/or model. */
export const AdminUsageReportSchema = z
  .object({
    object: z.literal('usage_report'),
    /** Unix seconds, inclusive. */
    from: z.number().int(),
    /** Unix seconds, exclusive. */
    to: z.number().int(),
    group_by: z.array(UsageGroupSchema),
    /** The currency of every `cost`. */
    currency: z.literal('usd'),
    rows: z.array(AdminUsageRowSchema),
    totals: AdminUsageRowSchema.pick({
      requests: true,
      prompt_tokens: true,
      completion_tokens: true,
      total_tokens: true,
      batch_requests: true,
      billable_tokens: true,
      cost: true,
    }),
  })
  .meta({ id: 'AdminUsageReport' });
export type AdminUsageReport = z.infer<typeof AdminUsageReportSchema>;
