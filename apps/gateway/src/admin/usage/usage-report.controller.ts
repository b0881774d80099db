import {
  type AdminUsageReport,
  ApiError,
  type CatalogEntry,
  type KeyLimitsState,
  LimitsOverrideSchema,
  type UsageGroup,
  UsageGroupSchema,
} from '@infer/contracts';
import { ApiKeysRepository, type Db, MembersRepository, usageReport } from '@infer/persistence/lazy';
import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { CatalogService } from '../../catalog/catalog.service.js';
import { PRISMA } from '../../infra/tokens.js';
import { LimitsService } from '../../limits/limits.service.js';
import { monthWindow } from '../../limits/periods.js';
import { Admin } from '../access/admin.decorator.js';

/**
 * The operators' HTTP API: usage from the ledger and the live state of a key's limits. Not reachable
 * with an API key: each handler carries `@Admin(need)` (admin/access/admin.guard.ts).
 */
@Controller('admin')
export class UsageReportController {
  private readonly keys: ApiKeysRepository;
  private readonly members: MembersRepository;

  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(LimitsService) private readonly limits: LimitsService,
  ) {
    this.keys = new ApiKeysRepository(db);
    this.members = new MembersRepository(db);
  }

  /**
   * GET /admin/usage?from=&to=&member=&key=&model=&group_by=member,key,model
   * from/to: ISO 8601 or Unix seconds; default the current calendar month (UTC). to is exclusive.
   */
  @Admin('read')
  @Get('usage')
  async usage(@Query() q: Record<string, unknown>): Promise<AdminUsageReport> {
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
    for (const r of rows) {
      totals.requests += r.requests;
      totals.prompt_tokens += r.promptTokens;
      totals.completion_tokens += r.completionTokens;
      totals.total_tokens += r.totalTokens;
      totals.batch_requests += r.batchRequests;
      totals.billable_tokens += r.billableTokens;
    }
    return {
      object: 'usage_report',
      from: Math.floor(+from / 1000),
      to: Math.floor(+to / 1000),
      group_by: groupBy,
      rows: rows.map((r) => ({
        ...(r.memberId !== undefined ? { member_id: r.memberId } : {}),
        ...(r.keyId !== undefined ? { key_id: r.keyId } : {}),
        ...(r.model !== undefined ? { model: r.model } : {}),
        requests: r.requests,
        prompt_tokens: r.promptTokens,
        completion_tokens: r.completionTokens,
        total_tokens: r.totalTokens,
        batch_requests: r.batchRequests,
        billable_tokens: r.billableTokens,
      })),
      totals,
    };
  }

  /** GET /admin/keys/{id or prefix}/limits: every limit of the key, its member and its models, now. */
  @Admin('read')
  @Get('keys/:key/limits')
  async keyLimits(@Param('key') keyRef: string): Promise<KeyLimitsState> {
    // No key id or prefix holds a NUL (PostgreSQL text cannot): not found, without asking.
    const key = keyRef.includes('\u0000') ? null : await this.keys.find(keyRef);
    if (!key) {
      throw new ApiError(404, `No API key with id or prefix '${keyRef}'.`, {
        type: 'invalid_request_error',
        code: 'key_not_found',
        param: 'key',
      });
    }
    const member = await this.members.require(key.memberId);
    const overrides = LimitsOverrideSchema.safeParse(key.limits ?? undefined);
    const snap = this.catalog.current;
    const models = snap
      .listFor(member.tier)
      .data.map((m) => snap.get(m.id))
      .filter((m): m is CatalogEntry => Boolean(m));
    const subject = {
      keyId: key.id,
      memberId: member.id,
      tier: member.tier,
      billingAnchor: member.billingPeriodAnchor,
      overrides: (key.limits as Record<string, unknown> | null) ?? null,
    };
    const now = this.limits.engine.clock();
    return {
      object: 'limits',
      key: { id: key.id, prefix: key.prefix, member_id: member.id, tier: member.tier },
      enabled: this.limits.enabled,
      overrides: key.limits && overrides.success ? overrides.data : null,
      at: Math.floor(now / 1000),
      limits: await this.limits.state(subject, models),
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
      throw ApiError.invalid('`group_by` takes member, key and/or model, comma-separated.', 'group_by');
    if (!out.includes(g.data)) out.push(g.data);
  }
  return out;
}
