import {
  type CatalogEntry,
  type EffectiveLimits,
  ErrorCode,
  ErrorType,
  IMAGE_ENDPOINT_PREFIX,
  type LimitState,
  SEARCH_ENDPOINTS,
  type Tier,
} from '@infer/contracts';
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
}

/** What a lost quota counter is rebuilt from: a sum over the usage ledger. */
export interface RebuildQuery {
  /** Sum of total tokens, or a count of requests. */
  unit: 'tokens' | 'requests';
  memberId?: string;
  keyId?: string;
  model?: string;
  /** Only these usage-event endpoints. */
  endpoints?: readonly string[];
  /** Only usage-event endpoints starting with this. */
  endpointPrefix?: string;
  from: Date;
  to: Date;
}

type WindowName = LimitState['window'];

interface CheckBase {
  /** Stable name shown by the admin API, e.g. `key.requests_per_minute`. */
  name: string;
  scope: 'key' | 'member';
  model: string | null;
  unit: 'requests' | 'tokens';
  window: WindowName;
  limit: number;
  /** Amount taken at admission (1 request, or the prompt estimate in tokens; 0 for a read). */
  cost: number;
  /** Charged again with the real usage when the response ends (token budgets). */
  settlesTokens: boolean;
  /** Which x-ratelimit-*-{requests,tokens} headers this check reports. */
  header?: 'requests' | 'tokens';
  status: 429 | 402;
  code: string;
  type: string;
  /** The refusal's message, given the time until the limit frees. */
  message(retryMs: number, now: number): string;
}

/** A counter in a fixed window (minute, day, calendar month, billing period). */
export interface WindowCheck extends CheckBase {
  kind: 'W';
  /** Redis key without the window id. */
  base: string;
  win: Window;
  /** The window that holds an instant (used again when the request settles). */
  period: (now: number) => Window;
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

export function redisKeyOf(c: Check): string {
  return c.kind === 'W' ? `${c.base}:${c.win.id}` : c.key;
}

/** Buckets per rolling window: 240 (one minute each for chat-G's 4 hours). */
export const ROLLING_BUCKETS = 240;

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const secs = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

function rateLimited(what: string) {
  return {
    status: 429 as const,
    code: ErrorCode.rateLimit,
    type: ErrorType.rateLimit,
    message: (retryMs: number) => `Rate limit reached: ${what}. Retry in ${secs(retryMs)}s.`,
  };
}

export interface PlanContext {
  subject: LimitSubject;
  limits: EffectiveLimits;
  /** Redis key prefix. */
  prefix: string;
  now: number;
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

function keyRpm(ctx: PlanContext, limit: number, cost: number): WindowCheck {
  const win = minuteWindow(ctx.now);
  return {
    kind: 'W',
    name: 'key.requests_per_minute',
    scope: 'key',
    model: null,
    unit: 'requests',
    window: 'minute',
    limit,
    cost,
    settlesTokens: false,
    header: 'requests',
    base: `${ctx.prefix}k:${ctx.subject.keyId}:rpm`,
    win,
    period: minuteWindow,
    ...rateLimited(`${fmt(limit)} requests per minute for this API key`),
  };
}

function keyConcurrency(ctx: PlanContext, limit: number, cost: number): LeaseCheck {
  return {
    kind: 'L',
    name: 'key.concurrent',
    scope: 'key',
    model: null,
    unit: 'requests',
    window: 'concurrent',
    limit,
    cost,
    settlesTokens: false,
    key: `${ctx.prefix}k:${ctx.subject.keyId}:cc`,
    ...rateLimited(`at most ${fmt(limit)} concurrent requests for this API key`),
  };
}

/**
 * The checks of one request to a model endpoint, in the order they are reported when several fail:
 * the non-retryable allowance (402) first, then the rolling budget, rates, then concurrency.
 */
export function planModel(ctx: PlanContext, model: CatalogEntry, estimate: number, read = false): Check[] {
  if (model.kind === 'image') return planImages(ctx, read);
  const { subject, limits, prefix, now } = ctx;
  const m = limits.models[model.id] ?? {};
  const one = read ? 0 : 1;
  const tokens = read ? 0 : estimate;
  const checks: Check[] = [];
  const mk = `${prefix}k:${subject.keyId}:m:${model.id}`;

  const allowance = m.allowance_tokens !== undefined ? m.allowance_tokens : (model.allowance?.tokens ?? null);
  if (allowance !== null) {
    const billing = model.allowance?.period === 'billing_period';
    const period = billing
      ? (t: number) => billingPeriod(subject.billingAnchor, t)
      : (t: number) => monthWindow(t);
    const what = billing ? 'billing period' : 'month';
    checks.push({
      kind: 'W',
      name: `models.${model.id}.allowance_tokens`,
      scope: 'member',
      model: model.id,
      unit: 'tokens',
      window: billing ? 'billing_period' : 'month',
      limit: allowance,
      cost: tokens,
      settlesTokens: true,
      base: `${prefix}m:${subject.memberId}:${model.id}:${billing ? 'bp' : 'mo'}`,
      win: period(now),
      period,
      rebuild: (win) => ({
        unit: 'tokens',
        memberId: subject.memberId,
        model: model.id,
        from: new Date(win.start),
        to: new Date(win.end),
      }),
      status: 402,
      code: ErrorCode.monthlyCap,
      type: ErrorType.quota,
      message: (retryMs, t) =>
        `The ${what}ly token allowance of ${model.id} (${fmt(allowance)} tokens) is spent or too small ` +
        `for this request; it starts again at ${iso(t + retryMs)}.`,
    });
  }

  const rolling = m.rolling_tokens ?? null;
  if (rolling) {
    const windowMs = rolling.window_minutes * MINUTE_MS;
    const hours =
      rolling.window_minutes % 60 === 0
        ? `${rolling.window_minutes / 60} hours`
        : `${rolling.window_minutes} minutes`;
    checks.push({
      kind: 'R',
      name: `models.${model.id}.rolling_tokens`,
      scope: 'key',
      model: model.id,
      unit: 'tokens',
      window: 'rolling',
      limit: rolling.tokens,
      cost: tokens,
      settlesTokens: true,
      key: `${mk}:roll`,
      bucketMs: windowMs / ROLLING_BUCKETS,
      buckets: ROLLING_BUCKETS,
      status: 429,
      code: ErrorCode.insufficientQuota,
      type: ErrorType.quota,
      message: (retryMs) =>
        `The token budget of ${model.id} (${fmt(rolling.tokens)} tokens per rolling ${hours}) is spent or too ` +
        `small for this request. Retry in ${secs(retryMs)}s.`,
    });
  }

  const rpm = m.requests_per_minute === undefined ? limits.key.requests_per_minute : m.requests_per_minute;
  if (rpm !== null && m.requests_per_minute === undefined) checks.push(keyRpm(ctx, rpm, one));
  else if (rpm !== null) {
    checks.push({
      kind: 'W',
      name: `models.${model.id}.requests_per_minute`,
      scope: 'key',
      model: model.id,
      unit: 'requests',
      window: 'minute',
      limit: rpm,
      cost: one,
      settlesTokens: false,
      header: 'requests',
      base: `${mk}:rpm`,
      win: minuteWindow(now),
      period: minuteWindow,
      ...rateLimited(`${fmt(rpm)} requests per minute on ${model.id} for this API key`),
    });
  }

  const tpm = m.tokens_per_minute ?? null;
  if (tpm !== null) {
    checks.push({
      kind: 'W',
      name: `models.${model.id}.tokens_per_minute`,
      scope: 'key',
      model: model.id,
      unit: 'tokens',
      window: 'minute',
      limit: tpm,
      cost: tokens,
      settlesTokens: true,
      base: `${mk}:tpm`,
      win: minuteWindow(now),
      period: minuteWindow,
      ...rateLimited(
        `${fmt(tpm)} tokens per minute on ${model.id} for this API key` +
          (estimate > tpm ? ` (this request's prompt alone is about ${fmt(estimate)} tokens)` : ''),
      ),
    });
  }

  if (limits.key.concurrent !== null) checks.push(keyConcurrency(ctx, limits.key.concurrent, one));
  const cc = m.concurrent ?? null;
  if (cc !== null) {
    checks.push({
      kind: 'L',
      name: `models.${model.id}.concurrent`,
      scope: 'key',
      model: model.id,
      unit: 'requests',
      window: 'concurrent',
      limit: cc,
      cost: one,
      settlesTokens: false,
      key: `${mk}:cc`,
      ...rateLimited(`at most ${fmt(cc)} concurrent requests on ${model.id} for this API key`),
    });
  }

  // x-ratelimit-*-tokens: the per-minute rate, else the rolling budget, else the allowance.
  const tokenHeader =
    checks.find((c) => c.name.endsWith('.tokens_per_minute')) ??
    checks.find((c) => c.kind === 'R') ??
    checks.find((c) => c.name.endsWith('.allowance_tokens'));
  if (tokenHeader) tokenHeader.header = 'tokens';
  return checks;
}

/** Images: per member 20 requests per minute and 100 per month, apart from the chat budgets. */
export function planImages(ctx: PlanContext, read = false): Check[] {
  const { subject, limits, prefix, now } = ctx;
  const one = read ? 0 : 1;
  const checks: Check[] = [];
  const base = `${prefix}m:${subject.memberId}:img`;
  const month = limits.images.requests_per_month;
  if (month !== null) {
    checks.push({
      kind: 'W',
      name: 'images.requests_per_month',
      scope: 'member',
      model: null,
      unit: 'requests',
      window: 'month',
      limit: month,
      cost: one,
      settlesTokens: false,
      base: `${base}:mo`,
      win: monthWindow(now),
      period: monthWindow,
      rebuild: (win) => ({
        unit: 'requests',
        memberId: subject.memberId,
        endpointPrefix: IMAGE_ENDPOINT_PREFIX,
        from: new Date(win.start),
        to: new Date(win.end),
      }),
      status: 429,
      code: ErrorCode.quotaExceeded,
      type: ErrorType.quota,
      message: (retryMs, t) =>
        `The monthly image quota (${fmt(month)} requests) is used up; it starts again at ${iso(t + retryMs)}.`,
    });
  }
  const rpm = limits.images.requests_per_minute;
  if (rpm !== null) {
    checks.push({
      kind: 'W',
      name: 'images.requests_per_minute',
      scope: 'member',
      model: null,
      unit: 'requests',
      window: 'minute',
      limit: rpm,
      cost: one,
      settlesTokens: false,
      header: 'requests',
      base: `${base}:rpm`,
      win: minuteWindow(now),
      period: minuteWindow,
      ...rateLimited(`${fmt(rpm)} image requests per minute`),
    });
  }
  if (limits.key.concurrent !== null) checks.push(keyConcurrency(ctx, limits.key.concurrent, one));
  return checks;
}

/** Web search and the MCP tool endpoint: one budget per key (20/min, 3 concurrent, 500/day). */
export function planSearch(ctx: PlanContext, read = false): Check[] {
  const { subject, limits, prefix, now } = ctx;
  const one = read ? 0 : 1;
  const checks: Check[] = [];
  const base = `${prefix}k:${subject.keyId}:search`;
  const day = limits.search.requests_per_day;
  if (day !== null) {
    checks.push({
      kind: 'W',
      name: 'search.requests_per_day',
      scope: 'key',
      model: null,
      unit: 'requests',
      window: 'day',
      limit: day,
      cost: one,
      settlesTokens: false,
      base: `${base}:day`,
      win: dayWindow(now),
      period: dayWindow,
      rebuild: (win) => ({
        unit: 'requests',
        keyId: subject.keyId,
        endpoints: SEARCH_ENDPOINTS,
        from: new Date(win.start),
        to: new Date(win.end),
      }),
      status: 429,
      code: ErrorCode.insufficientQuota,
      type: ErrorType.quota,
      message: (retryMs, t) =>
        `The daily web search quota (${fmt(day)} searches) is used up; it starts again at ${iso(t + retryMs)}.`,
    });
  }
  const rpm = limits.search.requests_per_minute;
  if (rpm !== null) {
    checks.push({
      kind: 'W',
      name: 'search.requests_per_minute',
      scope: 'key',
      model: null,
      unit: 'requests',
      window: 'minute',
      limit: rpm,
      cost: one,
      settlesTokens: false,
      header: 'requests',
      base: `${base}:rpm`,
      win: minuteWindow(now),
      period: minuteWindow,
      ...rateLimited(`${fmt(rpm)} web searches per minute for this API key`),
    });
  }
  const cc = limits.search.concurrent;
  if (cc !== null) {
    checks.push({
      kind: 'L',
      name: 'search.concurrent',
      scope: 'key',
      model: null,
      unit: 'requests',
      window: 'concurrent',
      limit: cc,
      cost: one,
      settlesTokens: false,
      key: `${base}:cc`,
      ...rateLimited(`at most ${fmt(cc)} concurrent web searches for this API key`),
    });
  }
  return checks;
}
