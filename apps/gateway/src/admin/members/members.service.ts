import {
  type AdminMember,
  CreateMemberRequestSchema,
  lifecycleChange,
  MemberQuerySchema,
  type MintedKey,
  MintKeyRequestSchema,
  parseOrThrow,
  SetMemberLimitsRequestSchema,
  UpdateMemberRequestSchema,
} from '@infer/contracts';
import { ApiKeysRepository, MembersRepository } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { CatalogService } from '../../catalog/catalog.service.js';
import { LimitsService } from '../../limits/limits.service.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { AdminInvalidation } from '../invalidation.service.js';
import { notFound, userError } from '../user-error.js';
import { keyAudit, keyView, memberAudit, memberView } from '../views.js';

/**
 * Members and the keys minted for them. Each change and its audit row are one PostgreSQL transaction
 * (AdminAccess.audited: the repositories bound to that transaction), and every gateway replica forgets
 * its cached key lookups at once (AdminInvalidation).
 */
@Injectable()
export class MembersService {
  constructor(
    @Inject(MembersRepository) private readonly members: MembersRepository,
    @Inject(ApiKeysRepository) private readonly keys: ApiKeysRepository,
    @Inject(AdminAccess) private readonly access: AdminAccess,
    @Inject(AdminInvalidation) private readonly invalidate: AdminInvalidation,
    @Inject(LimitsService) private readonly limits: LimitsService,
    @Inject(CatalogService) private readonly catalog: CatalogService,
  ) {}

  async list(query: unknown) {
    const q = parseOrThrow(MemberQuerySchema, query ?? {});
    const page = await this.members.search(q);
    return { object: 'list' as const, data: page.rows.map(memberView), next_after: page.nextAfter };
  }

  async create(actor: AdminActor, body: unknown): Promise<AdminMember> {
    const input = parseOrThrow(CreateMemberRequestSchema, body ?? {});
    const m = await this.access
      .audited(
        actor,
        (tx) =>
          new MembersRepository(tx).create({
            name: input.name,
            email: input.email ?? null,
            tier: input.tier,
            ...(input.billing_anchor ? { billingPeriodAnchor: new Date(input.billing_anchor) } : {}),
          }),
        (m) => ({ action: 'member.create', targetType: 'member', targetId: m.id, after: memberAudit(m) }),
      )
      .catch(userError);
    return memberView({ ...m, keyCount: 0 });
  }

  async get(id: string) {
    const m = await this.members.get(id).catch(() => null);
    if (!m) throw notFound('member', id, 'id');
    const keys = await this.keys.list(id);
    // The tier's budgets: what the member's own budget replaces ("inherited from tier" in the console).
    const { budget } = this.limits.tierLimits(m.tier, []);
    return {
      ...memberView({ ...m, keyCount: keys.length }),
      tier_limits: { budget },
      api_keys: keys.map(keyView),
    };
  }

  async update(actor: AdminActor, id: string, body: unknown): Promise<AdminMember> {
    const change = parseOrThrow(UpdateMemberRequestSchema, body ?? {});
    const before = await this.members.get(id).catch(() => null);
    if (!before) throw notFound('member', id, 'id');
    const onlyBodies =
      change.log_bodies !== undefined &&
      change.tier === undefined &&
      change.billing_anchor === undefined &&
      change.suspended === undefined;
    const action =
      change.suspended === true && !before.suspendedAt
        ? 'member.suspend'
        : change.suspended === false && before.suspendedAt
          ? 'member.unsuspend'
          : onlyBodies
            ? change.log_bodies
              ? 'member.log_bodies_on'
              : 'member.log_bodies_off'
            : 'member.update';
    const after = await this.access
      .audited(
        actor,
        (tx) =>
          new MembersRepository(tx).update(id, {
            ...(change.tier ? { tier: change.tier } : {}),
            ...(change.billing_anchor ? { billingPeriodAnchor: new Date(change.billing_anchor) } : {}),
            ...(change.suspended === undefined ? {} : { suspended: change.suspended }),
            ...(change.log_bodies === undefined ? {} : { logBodies: change.log_bodies }),
          }),
        (after) => ({
          action,
          targetType: 'member',
          targetId: id,
          before: memberAudit(before),
          after: memberAudit(after),
        }),
      )
      .catch(userError);
    // Tier, anchor, suspension and body logging are read with the key: every gateway forgets the
    // member's keys.
    await this.invalidate.keysChanged({ memberIds: [id] });
    return memberView(after);
  }

  /** PUT /admin/members/{id}/limits {limits: {budget: {member_per_month}} | null}: the member's budget. */
  async setLimits(actor: AdminActor, id: string, body: unknown): Promise<AdminMember> {
    const { limits } = parseOrThrow(SetMemberLimitsRequestSchema, body ?? {});
    const before = await this.members.get(id).catch(() => null);
    if (!before) throw notFound('member', id, 'id');
    const after = await this.access
      .audited(
        actor,
        (tx) => new MembersRepository(tx).setLimits(id, limits),
        (after) => ({
          action: limits === null ? 'member.clear_limits' : 'member.set_limits',
          targetType: 'member',
          targetId: id,
          before: memberAudit(before),
          after: memberAudit(after),
        }),
      )
      .catch(userError);
    // The member's budget travels with its cached keys: every gateway's limits follow at once.
    await this.invalidate.keysChanged({ memberIds: [id] });
    return memberView(after);
  }

  async mint(actor: AdminActor, memberId: string, body: unknown): Promise<MintedKey> {
    const { name, ...lifecycle } = parseOrThrow(MintKeyRequestSchema, body ?? {});
    const change = lifecycleChange(lifecycle);
    if (change.allowedModels?.length) {
      const member = await this.members.get(memberId).catch(() => null);
      if (member) this.catalog.assertWithinTier(member.tier, change.allowedModels);
    }
    const { key, record } = await this.access
      .audited(
        actor,
        (tx) => new ApiKeysRepository(tx).mint(memberId, name, change),
        ({ record }) => ({
          action: 'key.mint',
          targetType: 'api_key',
          targetId: record.id,
          after: keyAudit(record),
        }),
      )
      .catch(userError);
    return { object: 'api_key.secret', key, record: keyView(record) };
  }
}
