import {
  type AdminUsageReport,
  ApiError,
  formatMoney,
  type UsageGroup,
  UsageGroupSchema,
} from '@infer/contracts';
import { type Db, usageReport } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { PRISMA } from '../../infra/tokens.js';
import { monthWindow } from '../../limits/periods.js';

/**
 * The work behind UsageReportController (usage-report.controller.ts).
 *
 * Usage from the ledger, grouped by member, key and/or model (the live state of a key's limits is
 * GET /admin/keys/{key}/limits, keys/).
 */
@Injectable()
export class UsageReportService {
  constructor(@Inject(PRISMA) private readonly db: Db) {}

  /**
   * GET /admin/usage?from=&to=&member=&key=&model=&group_by=member,key,model,day
   * from/to: ISO 8601 or Unix seconds; default the current calendar month (UTC). to is exclusive.
   */
  async usage(q: Record<string, unknown>): Promise<AdminUsageReport> {
    const month = monthWindow(Date.now());
    const from = parseInstant(q.from, 'from') ?? new Date(month.start);
    const to = parseInstant(q.to, 'to') ?? new Date(month.end);
    if (+from >= +to) throw ApiError.invalid('`to` must be after `from`.', 'to');
    const groupBy = parseGroups(q.group_by);
    const rows = await usageReport(this.db, {
      from,
      to,
      memberId: str(q.member, 'member'),
      keyId: str(q.key, 'key'),
      model: str(q.model, 'model'),
      groupBy,
    });
    const totals = {
      requests: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      batch_requests: 0,
      billable_tokens: 0,
    };
    let cost = 0n;
    for (const r of rows) {
      totals.requests += r.requests;
      totals.prompt_tokens += r.promptTokens;
      totals.completion_tokens += r.completionTokens;
      totals.total_tokens += r.totalTokens;
      totals.batch_requests += r.batchRequests;
      totals.billable_tokens += r.billableTokens;
      cost += r.cost;
    }
    return {
      object: 'usage_report',
      from: Math.floor(+from / 1000),
      to: Math.floor(+to / 1000),
      group_by: groupBy,
      currency: 'usd',
      rows: rows.map((r) => ({
        ...(r.memberId !== undefined ? { member_id: r.memberId, member_name: r.memberName ?? null } : {}),
        ...(r.keyId !== undefined
          ? { key_id: r.keyId, key_name: r.keyName ?? null, key_prefix: r.keyPrefix ?? null }
          : {}),
        ...(r.model !== undefined ? { model: r.model } : {}),
        ...(r.day !== undefined ? { day: r.day } : {}),
        requests: r.requests,
        prompt_tokens: r.promptTokens,
        completion_tokens: r.completionTokens,
        total_tokens: r.totalTokens,
        batch_requests: r.batchRequests,
        billable_tokens: r.billableTokens,
        cost: formatMoney(r.cost),
      })),
      totals: { ...totals, cost: formatMoney(cost) },
    };
  }
}

function str(v: unknown, param: string): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw ApiError.invalid(`\`${param}\` must be given once.`, param);
  if (v.includes('\u0000')) throw ApiError.invalid(`\`${param}\` must not contain NUL characters.`, param);
  return v;
}

/** ISO 8601 or Unix seconds. */
function parseInstant(v: unknown, param: string): Date | undefined {
  const s = str(v, param);
  if (s === undefined) return undefined;
  const d = /^\d+$/.test(s) ? new Date(Number(s) * 1000) : new Date(s);
  if (Number.isNaN(+d))
    throw ApiError.invalid(`\`${param}\` must be an ISO 8601 date or Unix seconds.`, param);
  return d;
}

function parseGroups(v: unknown): UsageGroup[] {
  const s = str(v, 'group_by');
  if (s === undefined) return ['member', 'key', 'model'];
  const out: UsageGroup[] = [];
  for (const part of s.split(',').map((x) => x.trim())) {
    if (!part) continue;
    const g = UsageGroupSchema.safeParse(part);
    if (!g.success)
      throw ApiError.invalid('`group_by` takes member, key, model and/or day, comma-separated.', 'group_by');
    if (!out.includes(g.data)) out.push(g.data);
  }
  return out;
}
