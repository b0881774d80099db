import {
  type AdminKey,
  type AdminKeyList,
  ApiError,
  type CatalogEntry,
  type KeyLimitsState,
  KeyQuerySchema,
  LimitsOverrideSchema,
  lifecycleChange,
  type MintedKey,
  parseDuration,
  parseOrThrow,
  RotateKeyRequestSchema,
  SetKeyLimitsRequestSchema,
  UpdateKeyRequestSchema,
  withMemberLimits,
} from '@infer/contracts';
import { ApiKeysRepository, MembersRepository } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { CatalogService } from '../../catalog/catalog.service.js';
import { LimitsService } from '../../limits/limits.service.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { AdminInvalidation } from '../invalidation.service.js';
import { notFound, userError } from '../user-error.js';
import { keyAudit, keyView } from '../views.js';

/**
 * API keys of all members: search, revoke, rotate, limit overrides, and the live state of a key's
 * limits. Changes are audited in their own transaction and reach every replica at once.
 */
@Injectable()
export class KeysService {
  constructor(
    @Inject(ApiKeysRepository) private readonly keys: ApiKeysRepository,
    @Inject(MembersRepository) private readonly members: MembersRepository,
    @Inject(AdminAccess) private readonly access: AdminAccess,
    @Inject(AdminInvalidation) private readonly invalidate: AdminInvalidation,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(LimitsService) private readonly limits: LimitsService,
  ) {}

  async list(query: unknown): Promise<AdminKeyList> {
    const q = parseOrThrow(KeyQuerySchema, query ?? {});
    const page =
      q.sort === 'expiring'
        ? await this.keys
            .expiringSoonest({ memberId: q.member, after: q.after, limit: q.limit })
            .catch(userError)
        : await this.keys.search({
            q: q.q,
            memberId: q.member,
            status: q.status,
            after: q.after,
            limit: q.limit,
          });
    return {
      object: 'list',
      data: page.rows.map((k) => ({
        ...keyView(k),
        member: {
          id: k.member.id,
          name: k.member.name,
          tier: k.member.tier,
          suspended: Boolean(k.member.suspendedAt),
        },
      })),
      next_after: page.nextAfter,
    };
  }

  async revoke(actor: AdminActor, ref: string): Promise<AdminKey> {
    const before = await this.keys.find(ref);
    if (!before) throw notFound('API key', ref, 'key');
    const after = await this.access.audited(
      actor,
      (tx) => new ApiKeysRepository(tx).revoke(before.id),
      (after) =>
        before.revokedAt
          ? null
          : {
              action: 'key.revoke',
              targetType: 'api_key',
              targetId: after.id,
              before: keyAudit(before),
              after: keyAudit(after),
            },
    );
    await this.invalidate.keysChanged({ keyIds: [before.id] });
    return keyView(after);
  }

  /**
   * Rotation: a new secret for the same key (same id, name, limits and lifecycle); the old secret keeps
   * working for `grace` (default 24h; 0: revoked now). The new secret is in this answer only.
   */
  async rotate(actor: AdminActor, ref: string, body: unknown): Promise<MintedKey> {
    const { grace } = parseOrThrow(RotateKeyRequestSchema, body ?? {});
    const graceMs = parseDuration(grace) ?? 0;
    const old = await this.keys.find(ref);
    if (!old) throw notFound('API key', ref, 'key');
    if (old.revokedAt) {
      throw new ApiError(409, 'A revoked key cannot be rotated; mint a new one.', {
        type: 'invalid_request_error',
        code: 'key_revoked',
        param: 'key',
      });
    }
    // The new secret, the old one's grace and the audit row in one transaction.
    const { key, record } = await this.access
      .audited(
        actor,
        (tx) => new ApiKeysRepository(tx).rotate(old.id, graceMs),
        ({ record }) => ({
          action: 'key.rotate',
          targetType: 'api_key',
          targetId: old.id,
          before: keyAudit(old),
          after: { ...keyAudit(record), old_prefix: old.prefix, grace: grace },
        }),
      )
      .catch(userError);
    await this.invalidate.keysChanged({ keyIds: [old.id] });
    return { object: 'api_key.secret', key, record: keyView(record) };
  }

  /** Changes a key's expiry, model allow-list and/or IP allow-list. */
  async update(actor: AdminActor, ref: string, body: unknown): Promise<AdminKey> {
    const input = parseOrThrow(UpdateKeyRequestSchema, body ?? {});
    const change = lifecycleChange(input);
    if (!Object.keys(change).length) {
      throw new ApiError(
        400,
        'Nothing to change: give expires_at, expires_in, allowed_models or allowed_ips.',
        {
          type: 'invalid_request_error',
          code: 'invalid_request',
          param: null,
        },
      );
    }
    const before = await this.keys.find(ref);
    if (!before) throw notFound('API key', ref, 'key');
    if (change.allowedModels?.length) {
      const member = await this.members.get(before.memberId).catch(() => null);
      if (member) this.catalog.assertWithinTier(member.tier, change.allowedModels);
    }
    const after = await this.access
      .audited(
        actor,
        (tx) => new ApiKeysRepository(tx).updateLifecycle(before.id, change),
        (after) => ({
          action: 'key.update',
          targetType: 'api_key',
          targetId: before.id,
          before: keyAudit(before),
          after: keyAudit(after),
        }),
      )
      .catch(userError);
    await this.invalidate.keysChanged({ keyIds: [before.id] });
    return keyView(after);
  }

  async setLimits(actor: AdminActor, ref: string, body: unknown): Promise<AdminKey> {
    const { limits } = parseOrThrow(SetKeyLimitsRequestSchema, body ?? {});
    if (limits?.budget?.member_per_month !== undefined)
      throw ApiError.invalid(
        "A member's budget is the member's own (PUT /admin/members/{id}/limits), not a key's.",
        'limits.budget.member_per_month',
      );
    const before = await this.keys.find(ref);
    if (!before) throw notFound('API key', ref, 'key');
    const after = await this.access
      .audited(
        actor,
        (tx) => new ApiKeysRepository(tx).setLimits(before.id, limits),
        (after) => ({
          action: limits === null ? 'key.clear_limits' : 'key.set_limits',
          targetType: 'api_key',
          targetId: before.id,
          before: keyAudit(before),
          after: keyAudit(after),
        }),
      )
      .catch(userError);
    // Overrides travel with the cached key: every gateway's limits plan follows at once.
    await this.invalidate.keysChanged({ keyIds: [before.id] });
    return keyView(after);
  }

  /** Every limit of the key, its member and its models, now (the limits store's own counters). */
  async limitsState(keyRef: string): Promise<KeyLimitsState> {
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
      overrides: withMemberLimits(key.limits, member.limits),
    };
    const now = this.limits.store.clock();
    return {
      object: 'limits',
      key: { id: key.id, prefix: key.prefix, member_id: member.id, tier: member.tier },
      enabled: this.limits.enabled,
      overrides: key.limits && overrides.success ? overrides.data : null,
      tier_limits: this.limits.tierLimits(member.tier, models),
      at: Math.floor(now / 1000),
      limits: await this.limits.state(subject, models),
    };
  }
}
