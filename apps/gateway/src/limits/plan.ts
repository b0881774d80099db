import {
  type CatalogEntry,
  type EffectiveLimits,
  ErrorCode,
  ErrorType,
  formatCount,
  formatMoney,
  IMAGE_ENDPOINT_PREFIX,
  type LimitState,
  parseMoney,
  SEARCH_ENDPOINTS,
  type Tier,
} from '@infer/contracts';
import type { UsageTotalQuery } from '@infer/persistence/lazy';
import { billingPeriod, dayWindow, MINUTE_MS, minuteWindow, monthWindow, type Window } from './periods.js';

/** Who a request counts against: what the auth step knows about the key. */
export interface LimitSubject {
  keyId: string;
  memberId: string;
  tier: Tier;
  /** Start of the member's billing periods (chat-G's allowance period). */
  billingAnchor: Date;
  /** The key's own overrides (ApiKey.limits), validated by the limits service. */
  overrides: Record<string, unknown> | null;
  /** The member's body-logging switch (docs/adr/0110-request-log.md): absent when off. */
  logBodies?: boolean;
}

/** What a lost quota counter is rebuilt from: a sum over the usage ledger (the ledger's own query). */
export type RebuildQuery = UsageTotalQuery;

type WindowName = LimitState['window'];

interface CheckBase {
  /** Stable name shown by the admin API, e.g. `key.requests_per_minute`. */
  name: string;
  scope: 'key' | 'member';
  model: string | null;
  /** `nano_usd`: a budget (the request's cost is reserved and settled, ADR 0101). */
  unit: 'requests' | 'tokens' | 'nano_usd';
  window: WindowName;
  limit: number;
  /** Charged again with the real usage when the response ends (token budgets). */
  settlesTokens: boolean;
  /**
   * A token limit (tokens per minute, rolling budget, allowance) also holds the request's output from
   * admission to settle (outputReservation), so that concurrent requests cannot together spend past it.
   */
  holdsOutput: boolean;
  /** Which x-ratelimit-*-{requests,tokens} headers this check reports. */
  header?: 'requests' | 'tokens';
  status: 429 | 402;
  code: string;
  type: string;
  /** The refusal's message, given the time until the limit frees and the request's prompt estimate. */
  message(retryMs: number, now: number, estimate: number): string;
}

/** A counter in a fixed window (minute, day, calendar month, billing period). */
export interface WindowCheck extends CheckBase {
  kind: 'W';
  /** Redis key without the window id. */
  base: string;
  /** The window that holds an instant (used again when the request settles). */
  period: (now: number) => Window;
  /** The last window used and its Redis key (computed once per window, not per request). */
  cur: { win: Window; key: string } | null;
  /** A quota counter: rebuilt from the ledger when Redis does not have it. */
  rebuild?: (win: Window) => RebuildQuery;
}

/** Concurrency slots: leases that expire unless renewed. */
export interface LeaseCheck extends CheckBase {
  kind: 'L';
  key: string;
}

/** A token budget over a rolling window, kept in buckets. */
export interface RollingCheck extends CheckBase {
  kind: 'R';
  key: string;
  bucketMs: number;
  buckets: number;
}

export type Check = WindowCheck | LeaseCheck | RollingCheck;

/** The window of a fixed-window check that holds `now`, with its Redis key (cached on the check). */
export function windowAt(c: WindowCheck, now: number): { win: Window; key: string } {
  const cur = c.cur;
  if (cur && now >= cur.win.start && now < cur.win.end) return cur;
  const win = c.period(now);
  const next = { win, key: `${c.base}:${win.id}` };
  c.cur = next;
  return next;
}

/** The Redis key a check uses at `now`. */
export function redisKeyOf(c: Check, now: number): string {
  return c.kind === 'W' ? windowAt(c, now).key : c.key;
}

/** Amount a check takes for one request: 1 request, or the prompt estimate in tokens (0 for a read). */
export function costOf(c: Check, estimate: number, read = false): number {
  if (read) return 0;
  return c.unit === 'tokens' ? estimate : 1;
}

/**
 * The Redis key prefix of a member: every key of one admission (the key's own counters and the
 * member's) carries the member's hash tag, so on a Redis Cluster they all live in one hash slot and one
 * script can take them together.
 */
export function memberTag(prefix: string, memberId: string): string {
  return `${prefix}{${memberId}}:`;
}

/** Buckets per rolling window: 240 (one minute each for chat-G's 4 hours). */
export const ROLLING_BUCKETS = 240;

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const secs = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

function rateLimited(what: string | ((estimate: number) => string)) {
  return {
    status: 429 as const,
    code: ErrorCode.rateLimit,
    type: ErrorType.rateLimit,
    message: (retryMs: number, _now: number, estimate: number) =>
      `Rate limit reached: ${typeof what === 'string' ? what : what(estimate)}. Retry in ${secs(retryMs)}s.`,
  };
}

/**
 * The one Redis Cluster hash slot of a plan's keys. A layout whose keys span slots cannot run as one
 * script on a cluster: it is refused here, when the plan is built, with the keys that differ.
 */
export function planSlot(checks: readonly Check[], slotOf: (key: string) => number, now: number): number {
  let slot = -1;
  let first = '';
  for (const c of checks) {
    const key = redisKeyOf(c, now);
    const s = slotOf(key);
    if (slot === -1) {
      slot = s;
      first = key;
    } else if (s !== slot)
      throw new Error(
        `limit layout crosses Redis Cluster hash slots: ${first} (slot ${slot}) and ${key} (slot ${s}) ` +
          'are checked by one admission; every key of an admission must carry the member hash tag',
      );
  }
  return slot;
}

export interface PlanContext {
  subject: LimitSubject;
  limits: EffectiveLimits;
  /** Redis key prefix of the member (memberTag): the Redis key prefix and the member's hash tag. */
  prefix: string;
}

/** What every check states: its name, whom it counts against, its limit and this request's cost. */
interface Counter {
  name: string;
  scope: 'key' | 'member';
  /** The model it is about (null: not model-specific). */
  model?: string | null;
  /** Requests (the default), or tokens, which are charged again with the real usage, or money. */
  unit?: 'requests' | 'tokens' | 'nano_usd';
  limit: number;
}

function counter(c: Counter, window: WindowName) {
  const unit = c.unit ?? 'requests';
  return {
    name: c.name,
    scope: c.scope,
    model: c.model ?? null,
    unit,
    window,
    limit: c.limit,
    settlesTokens: unit === 'tokens',
    holdsOutput: unit === 'tokens',
  };
}

/** A quota refusal: the period's budget is used up until the next period starts. */
function quotaSpent(status: 429 | 402, code: string, what: string) {
  return {
    status,
    code,
    type: ErrorType.quota,
    message: (retryMs: number, t: number) => `${what}; it starts again at ${iso(t + retryMs)}.`,
  };
}

/**
 * A rate over the current minute (429 rate_limit_exceeded, "`what`"). Request rates report the
 * x-ratelimit-*-requests headers.
 */
function perMinute(
  c: Counter & { base: string; what: string | ((estimate: number) => string) },
): WindowCheck {
  const fields = counter(c, 'minute');
  return {
    kind: 'W',
    ...fields,
    ...(fields.unit === 'requests' ? { header: 'requests' as const } : {}),
    base: c.base,
    period: minuteWindow,
    cur: null,
    ...rateLimited(c.what),
  };
}

/** A quota over a period (day, month, billing period), rebuilt from the usage ledger when lost. */
function quota(
  c: Counter & {
    window: WindowName;
    period: (now: number) => Window;
    base: string;
    /** The ledger rows it sums (the unit and the window's dates are added). */
    ledger: Omit<RebuildQuery, 'unit' | 'from' | 'to'>;
    refusal: ReturnType<typeof quotaSpent>;
  },
): WindowCheck {
  const fields = counter(c, c.window);
  return {
    kind: 'W',
    ...fields,
    base: c.base,
    period: c.period,
    cur: null,
    rebuild: (win) => ({
      unit: fields.unit === 'nano_usd' ? 'cost' : fields.unit,
      ...c.ledger,
      from: new Date(win.start),
      to: new Date(win.end),
    }),
    ...c.refusal,
  };
}

/** Concurrency slots (429 rate_limit_exceeded, "`what`"). */
function concurrency(c: Counter & { key: string; what: string }): LeaseCheck {
  return {
    kind: 'L',
    ...counter(c, 'concurrent'),
    key: c.key,
    ...rateLimited(c.what),
  };
}

/**
 * A token budget over a rolling window, kept in ROLLING_BUCKETS buckets (429 insufficient_quota,
 * "`what` is spent or too small for this request").
 */
function rollingBudget(c: Counter & { key: string; windowMs: number; what: string }): RollingCheck {
  return {
    kind: 'R',
    ...counter(c, 'rolling'),
    key: c.key,
    bucketMs: c.windowMs / ROLLING_BUCKETS,
    buckets: ROLLING_BUCKETS,
    status: 429,
    code: ErrorCode.insufficientQuota,
    type: ErrorType.quota,
    message: (retryMs: number) =>
      `${c.what} is spent or too small for this request. Retry in ${secs(retryMs)}s.`,
  };
}

function keyRpm(ctx: PlanContext, limit: number): WindowCheck {
  return perMinute({
    name: 'key.requests_per_minute',
    scope: 'key',
    limit,
    base: `${ctx.prefix}k:${ctx.subject.keyId}:rpm`,
    what: `${formatCount(limit)} requests per minute for this API key`,
  });
}

function keyConcurrency(ctx: PlanContext, limit: number): LeaseCheck {
  return concurrency({
    name: 'key.concurrent',
    scope: 'key',
    limit,
    key: `${ctx.prefix}k:${ctx.subject.keyId}:cc`,
    what: `at most ${formatCount(limit)} concurrent requests for this API key`,
  });
}

/**
 * The checks of one request to a model endpoint, in the order they are reported when several fail:
 * the non-retryable allowance (402) first, then the rolling budget, rates, then concurrency.
 */
export function planModel(ctx: PlanContext, model: CatalogEntry): Check[] {
  if (model.kind === 'image') return planImages(ctx);
  const { subject, limits, prefix } = ctx;
  const m = limits.models[model.id] ?? {};
  const checks: Check[] = [];
  checks.push(...planBudgets(ctx));
  const mk = `${prefix}k:${subject.keyId}:m:${model.id}`;
  const name = (limit: string) => `models.${model.id}.${limit}`;

  const allowance = m.allowance_tokens !== undefined ? m.allowance_tokens : (model.allowance?.tokens ?? null);
  if (allowance !== null) {
    const billing = model.allowance?.period === 'billing_period';
    const period = billing
      ? (t: number) => billingPeriod(subject.billingAnchor, t)
      : (t: number) => monthWindow(t);
    const what = billing ? 'billing period' : 'month';
    checks.push(
      quota({
        name: name('allowance_tokens'),
        scope: 'member',
        model: model.id,
        unit: 'tokens',
        limit: allowance,
        window: billing ? 'billing_period' : 'month',
        period,
        base: `${prefix}m:${model.id}:${billing ? 'bp' : 'mo'}`,
        ledger: { memberId: subject.memberId, model: model.id },
        refusal: quotaSpent(
          402,
          ErrorCode.monthlyCap,
          `The ${what}ly token allowance of ${model.id} (${formatCount(allowance)} tokens) is spent or too small ` +
            'for this request',
        ),
      }),
    );
  }

  const rolling = m.rolling_tokens ?? null;
  if (rolling) {
    const hours =
      rolling.window_minutes % 60 === 0
        ? `${rolling.window_minutes / 60} hours`
        : `${rolling.window_minutes} minutes`;
    checks.push(
      rollingBudget({
        name: name('rolling_tokens'),
        scope: 'key',
        model: model.id,
        unit: 'tokens',
        limit: rolling.tokens,
        key: `${mk}:roll`,
        windowMs: rolling.window_minutes * MINUTE_MS,
        what: `The token budget of ${model.id} (${formatCount(rolling.tokens)} tokens per rolling ${hours})`,
      }),
    );
  }

  const rpm = m.requests_per_minute === undefined ? limits.key.requests_per_minute : m.requests_per_minute;
  if (rpm !== null && m.requests_per_minute === undefined) checks.push(keyRpm(ctx, rpm));
  else if (rpm !== null) {
    checks.push(
      perMinute({
        name: name('requests_per_minute'),
        scope: 'key',
        model: model.id,
        limit: rpm,
        base: `${mk}:rpm`,
        what: `${formatCount(rpm)} requests per minute on ${model.id} for this API key`,
      }),
    );
  }

  const tpm = m.tokens_per_minute ?? null;
  if (tpm !== null) {
    checks.push(
      perMinute({
        name: name('tokens_per_minute'),
        scope: 'key',
        model: model.id,
        unit: 'tokens',
        limit: tpm,
        base: `${mk}:tpm`,
        what: (estimate) =>
          `${formatCount(tpm)} tokens per minute on ${model.id} for this API key` +
          (estimate > tpm ? ` (this request's prompt alone is about ${formatCount(estimate)} tokens)` : ''),
      }),
    );
  }

  if (limits.key.concurrent !== null) checks.push(keyConcurrency(ctx, limits.key.concurrent));
  const cc = m.concurrent ?? null;
  if (cc !== null) {
    checks.push(
      concurrency({
        name: name('concurrent'),
        scope: 'key',
        model: model.id,
        limit: cc,
        key: `${mk}:cc`,
        what: `at most ${formatCount(cc)} concurrent requests on ${model.id} for this API key`,
      }),
    );
  }

  // x-ratelimit-*-tokens: the per-minute rate, else the rolling budget, else the allowance.
  const tokenHeader =
    checks.find((c) => c.name.endsWith('.tokens_per_minute')) ??
    checks.find((c) => c.kind === 'R') ??
    checks.find((c) => c.name.endsWith('.allowance_tokens'));
  if (tokenHeader) tokenHeader.header = 'tokens';
  return checks;
}

/** The refusal of a spent budget: 402 budget_exceeded, until the next month starts. */
export const BUDGET_EXCEEDED = 'budget_exceeded';

/**
 * The monthly budgets (money) of the member and of the key, first among the checks of every request
 * that costs money (402 budget_exceeded). Rebuilt from the ledger's stored costs when Redis lost them.
 */
export function planBudgets(ctx: PlanContext): Check[] {
  const { subject, limits, prefix } = ctx;
  const checks: Check[] = [];
  const budget = (
    name: string,
    scope: 'key' | 'member',
    amount: string | number | null,
    base: string,
    ledger: Omit<RebuildQuery, 'unit' | 'from' | 'to'>,
    whose: string,
  ) => {
    const limit = amount === null ? null : parseMoney(amount);
    if (limit === null) return;
    checks.push(
      quota({
        name,
        scope,
        unit: 'nano_usd',
        limit,
        window: 'month',
        period: monthWindow,
        base,
        ledger,
        refusal: quotaSpent(
          402,
          BUDGET_EXCEEDED,
          `The monthly budget of ${whose} ($${formatMoney(limit)}) is spent or too small for this request`,
        ),
      }),
    );
  };
  budget(
    'member.budget_per_month',
    'member',
    limits.budget.member_per_month,
    `${prefix}m:usd:mo`,
    { memberId: subject.memberId },
    'this member',
  );
  budget(
    'key.budget_per_month',
    'key',
    limits.budget.key_per_month,
    `${prefix}k:${subject.keyId}:usd:mo`,
    { keyId: subject.keyId },
    'this API key',
  );
  return checks;
}

/** Images: per member 20 requests per minute and 100 per month, apart from the chat budgets. */
export function planImages(ctx: PlanContext): Check[] {
  const { subject, limits, prefix } = ctx;
  const checks: Check[] = planBudgets(ctx);
  const base = `${prefix}m:img`;
  const month = limits.images.requests_per_month;
  if (month !== null) {
    checks.push(
      quota({
        name: 'images.requests_per_month',
        scope: 'member',
        limit: month,
        window: 'month',
        period: monthWindow,
        base: `${base}:mo`,
        ledger: { memberId: subject.memberId, endpointPrefix: IMAGE_ENDPOINT_PREFIX },
        refusal: quotaSpent(
          429,
          ErrorCode.quotaExceeded,
          `The monthly image quota (${formatCount(month)} requests) is used up`,
        ),
      }),
    );
  }
  const rpm = limits.images.requests_per_minute;
  if (rpm !== null) {
    checks.push(
      perMinute({
        name: 'images.requests_per_minute',
        scope: 'member',
        limit: rpm,
        base: `${base}:rpm`,
        what: `${formatCount(rpm)} image requests per minute`,
      }),
    );
  }
  if (limits.key.concurrent !== null) checks.push(keyConcurrency(ctx, limits.key.concurrent));
  return checks;
}

/** Web search and the MCP tool endpoint: one budget per key (20/min, 3 concurrent, 500/day). */
export function planSearch(ctx: PlanContext): Check[] {
  const { subject, limits, prefix } = ctx;
  const checks: Check[] = planBudgets(ctx);
  const base = `${prefix}k:${subject.keyId}:search`;
  const day = limits.search.requests_per_day;
  if (day !== null) {
    checks.push(
      quota({
        name: 'search.requests_per_day',
        scope: 'key',
        limit: day,
        window: 'day',
        period: dayWindow,
        base: `${base}:day`,
        ledger: { keyId: subject.keyId, endpoints: SEARCH_ENDPOINTS },
        refusal: quotaSpent(
          429,
          ErrorCode.insufficientQuota,
          `The daily web search quota (${formatCount(day)} searches) is used up`,
        ),
      }),
    );
  }
  const rpm = limits.search.requests_per_minute;
  if (rpm !== null) {
    checks.push(
      perMinute({
        name: 'search.requests_per_minute',
        scope: 'key',
        limit: rpm,
        base: `${base}:rpm`,
        what: `${formatCount(rpm)} web searches per minute for this API key`,
      }),
    );
  }
  const cc = limits.search.concurrent;
  if (cc !== null) {
    checks.push(
      concurrency({
        name: 'search.concurrent',
        scope: 'key',
        limit: cc,
        key: `${base}:cc`,
        what: `at most ${formatCount(cc)} concurrent web searches for this API key`,
      }),
    );
  }
  return checks;
}
