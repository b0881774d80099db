import {
  type AdminKey,
  type AdminKeyList,
  ApiError,
  type CatalogEntry,
  type KeyLimitsState,
  KeyQuerySchema,
  LimitsOverrideSchema,
  type MintedKey,
  parseOrThrow,
  SetKeyLimitsRequestSchema,
} from '@infer/contracts';
import { ApiKeysRepository, MembersRepository } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { CatalogService } from '../../catalog/catalog.service.js';
import { LimitsService } from '../../limits/limits.service.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { AdminInvalidation } from '../invalidation.js';
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
    const page = await this.keys.search({
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
   * Rotation: a new key for the same member with the same name and limit overrides; the old key is
   * revoked at once. The new key is in this answer only.
   */
  async rotate(actor: AdminActor, ref: string): Promise<MintedKey> {
    const old = await this.keys.find(ref);
    if (!old) throw notFound('API key', ref, 'key');
    if (old.revokedAt) {
      throw new ApiError(409, 'A revoked key cannot be rotated; mint a new one.', {
        type: 'invalid_request_error',
        code: 'key_revoked',
        param: 'key',
      });
    }
    const limits = (old.limits as Record<string, unknown> | null) ?? undefined;
    // Mint, revoke and audit in one transaction: never a new key without the old one revoked.
    const { key, record } = await this.access
      .audited(
        actor,
        async (tx) => {
          const keys = new ApiKeysRepository(tx);
          const minted = await keys.mint(old.memberId, old.name, limits ? { limits } : {});
          return { ...minted, revoked: await keys.revoke(old.id) };
        },
        ({ record, revoked }) => ({
          action: 'key.rotate',
          targetType: 'api_key',
          targetId: old.id,
          before: keyAudit(old),
          after: { ...keyAudit(revoked), replaced_by: record.id, new_prefix: record.prefix },
        }),
      )
      .catch(userError);
    await this.invalidate.keysChanged({ keyIds: [old.id] });
    return { object: 'api_key.secret', key, record: keyView(record) };
  }

  async setLimits(actor: AdminActor, ref: string, body: unknown): Promise<AdminKey> {
    const { limits } = parseOrThrow(SetKeyLimitsRequestSchema, body ?? {});
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

  /** Every limit of the key, its member and its models, now (the limits engine's own counters). */
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
