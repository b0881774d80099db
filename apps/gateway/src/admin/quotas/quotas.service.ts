import { type CatalogEntry, type LimitState, type MemberQuotas } from '@infer/contracts';
import { ApiKeysRepository, type Db, MembersRepository } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { CatalogService } from '../../catalog/catalog.service.js';
import { PRISMA } from '../../infra/tokens.js';
import { LimitsService } from '../../limits/limits.service.js';
import { notFound } from '../user-error.js';

/** Active keys whose quotas are read (the newest); a member with more gets `keys_omitted`. */
export const QUOTA_KEYS = 20;

/** Quotas are the limits counted over a period, not the per-minute rates or concurrency. */
const QUOTA_WINDOWS = new Set<LimitState['window']>(['day', 'month', 'billing_period', 'rolling']);

/**
 * The work behind QuotasController (quotas.controller.ts).
 *
 * GET /admin/members/{id}/quotas: every quota of a member as the gateway's limits store counts it
 * (LimitsStore.state: the same Redis counters and the same ledger rebuild the admission uses):
 * the member's own (token allowances per month or billing period, images per month) once, and each
 * active key's (rolling token budgets, web searches per day). Any role.
 */
@Injectable()
export class QuotasService {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(MembersRepository) private readonly members: MembersRepository,
    @Inject(ApiKeysRepository) private readonly keys: ApiKeysRepository,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(LimitsService) private readonly limits: LimitsService,
  ) {}

  async quotas(id: string): Promise<MemberQuotas> {
    const member = id.includes('\u0000') ? null : await this.members.get(id).catch(() => null);
    if (!member) throw notFound('member', id, 'id');
    const page = await this.keys.search({ memberId: member.id, status: 'active', limit: QUOTA_KEYS });
    const active = page.rows;
    const snap = this.catalog.current;
    const models = snap
      .listFor(member.tier)
      .data.map((m) => snap.get(m.id))
      .filter((m): m is CatalogEntry => Boolean(m));
    const subject = (keyId: string, overrides: unknown) => ({
      keyId,
      memberId: member.id,
      tier: member.tier,
      billingAnchor: member.billingPeriodAnchor,
      overrides: (overrides as Record<string, unknown> | null) ?? null,
    });
    // The member's counters do not depend on the key: read them with the first key (or none).
    const memberQuota = (l: Pick<LimitState, 'scope' | 'window'>) =>
      l.scope === 'member' && QUOTA_WINDOWS.has(l.window);
    const keyQuota = (l: Pick<LimitState, 'scope' | 'window'>) =>
      l.scope === 'key' && QUOTA_WINDOWS.has(l.window);
    const memberState = await this.limits.state(
      subject(active[0]?.id ?? '-', active[0]?.limits ?? null),
      models,
      memberQuota,
    );
    const perKey = await Promise.all(
      active.map(async (k) => ({
        id: k.id,
        prefix: k.prefix,
        name: k.name,
        quotas: await this.limits.state(subject(k.id, k.limits), models, keyQuota),
      })),
    );
    const total = page.nextAfter
      ? await this.db.apiKey.count({ where: { memberId: member.id, revokedAt: null } })
      : active.length;
    return {
      object: 'member.quotas',
      member_id: member.id,
      enabled: this.limits.enabled,
      at: Math.floor(this.limits.store.clock() / 1000),
      member: memberState,
      keys: perKey,
      keys_omitted: Math.max(0, total - active.length),
    };
  }
}
