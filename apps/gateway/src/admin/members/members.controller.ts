import {
  type AdminKey,
  type AdminKeyList,
  type AdminMember,
  ApiError,
  CreateMemberRequestSchema,
  KeyQuerySchema,
  LimitsOverrideSchema,
  MemberQuerySchema,
  type MintedKey,
  MintKeyRequestSchema,
  parseOrThrow,
  SetKeyLimitsRequestSchema,
  UpdateMemberRequestSchema,
  UpdateModelRequestSchema,
} from '@infer/contracts';
import {
  type ApiKeyInfo,
  ApiKeysRepository,
  type Db,
  type Member,
  MembersRepository,
} from '@infer/persistence/lazy';
import { Body, Controller, Get, HttpCode, Inject, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { PRISMA } from '../../infra/tokens.js';
import { Actor, Admin } from '../access/admin.decorator.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { AdminInvalidation } from '../invalidation.js';
import { notFound, userError } from '../user-error.js';

const secs = (d: Date) => Math.floor(+d / 1000);

export function memberView(m: Member & { keyCount?: number }): AdminMember {
  return {
    object: 'member',
    id: m.id,
    name: m.name,
    email: m.email,
    tier: m.tier,
    billing_anchor: secs(m.billingPeriodAnchor),
    suspended: Boolean(m.suspendedAt),
    created_at: secs(m.createdAt),
    ...(m.keyCount === undefined ? {} : { keys: m.keyCount }),
  };
}

export function keyView(k: ApiKeyInfo): AdminKey {
  const limits = LimitsOverrideSchema.safeParse(k.limits ?? undefined);
  return {
    object: 'api_key',
    id: k.id,
    member_id: k.memberId,
    name: k.name,
    prefix: k.prefix,
    created_at: secs(k.createdAt),
    last_used_at: k.lastUsedAt ? secs(k.lastUsedAt) : null,
    revoked_at: k.revokedAt ? secs(k.revokedAt) : null,
    limits: k.limits && limits.success ? limits.data : null,
  };
}

const memberAudit = (m: Member) => ({
  name: m.name,
  email: m.email,
  tier: m.tier,
  billing_anchor: m.billingPeriodAnchor.toISOString(),
  suspended: Boolean(m.suspendedAt),
});
const keyAudit = (k: ApiKeyInfo) => ({
  member_id: k.memberId,
  name: k.name,
  prefix: k.prefix,
  revoked: Boolean(k.revokedAt),
  limits: k.limits ?? null,
});

/**
 * Members, their keys and the model catalog for the operator console (and automation with
 * ADMIN_TOKEN). Reads need any role; changes need admin or owner; each change and its audit row
 * are one PostgreSQL transaction, and every gateway replica applies the change at once (NATS).
 *   GET   /admin/members?q=&tier=&status=&after=&limit=   one page, newest first
 *   POST  /admin/members                                   {name, email?, tier, billing_anchor?}
 *   GET   /admin/members/{id}                              member and its keys
 *   PATCH /admin/members/{id}                              {tier?, billing_anchor?, suspended?}
 *   POST  /admin/members/{id}/keys                         {name?} -> the key, shown this once
 *   GET   /admin/keys?q=&member=&status=&after=&limit=     keys of all members, newest first
 *   POST  /admin/keys/{id or prefix}/revoke
 *   POST  /admin/keys/{id or prefix}/rotate                 a new key with the same name and limits
 *   PUT   /admin/keys/{id or prefix}/limits                {limits: LimitsOverride | null}
 *   GET   /admin/models                                    every model, disabled ones included
 *   PATCH /admin/models/{id}                               {enabled}
 */
@Controller('admin')
export class MembersAdminController {
  private readonly members: MembersRepository;
  private readonly keys: ApiKeysRepository;

  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(AdminAccess) private readonly access: AdminAccess,
    @Inject(AdminInvalidation) private readonly invalidate: AdminInvalidation,
  ) {
    this.members = new MembersRepository(db);
    this.keys = new ApiKeysRepository(db);
  }

  @Admin('read')
  @Get('members')
  async list(@Query() query: unknown) {
    const q = parseOrThrow(MemberQuerySchema, query ?? {});
    const page = await this.members.search(q);
    return { object: 'list' as const, data: page.rows.map(memberView), next_after: page.nextAfter };
  }

  @Admin('write')
  @Post('members')
  async create(@Actor() actor: AdminActor, @Body() body: unknown): Promise<AdminMember> {
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

  @Admin('read')
  @Get('members/:id')
  async get(@Param('id') id: string) {
    const m = await this.members.get(id).catch(() => null);
    if (!m) throw notFound('member', id, 'id');
    const keys = await this.keys.list(id);
    return { ...memberView({ ...m, keyCount: keys.length }), api_keys: keys.map(keyView) };
  }

  @Admin('write')
  @Patch('members/:id')
  async update(
    @Actor() actor: AdminActor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<AdminMember> {
    const change = parseOrThrow(UpdateMemberRequestSchema, body ?? {});
    const before = await this.members.get(id).catch(() => null);
    if (!before) throw notFound('member', id, 'id');
    const action =
      change.suspended === true && !before.suspendedAt
        ? 'member.suspend'
        : change.suspended === false && before.suspendedAt
          ? 'member.unsuspend'
          : 'member.update';
    const after = await this.access
      .audited(
        actor,
        (tx) =>
          new MembersRepository(tx).update(id, {
            ...(change.tier ? { tier: change.tier } : {}),
            ...(change.billing_anchor ? { billingPeriodAnchor: new Date(change.billing_anchor) } : {}),
            ...(change.suspended === undefined ? {} : { suspended: change.suspended }),
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
    // Tier, anchor and suspension are read with the key: every gateway forgets its cached lookups.
    await this.invalidate.changed('keys');
    return memberView(after);
  }

  @Admin('write')
  @Post('members/:id/keys')
  async mint(@Actor() actor: AdminActor, @Param('id') id: string, @Body() body: unknown): Promise<MintedKey> {
    const { name } = parseOrThrow(MintKeyRequestSchema, body ?? {});
    const { key, record } = await this.access
      .audited(
        actor,
        (tx) => new ApiKeysRepository(tx).mint(id, name),
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

  @Admin('read')
  @Get('keys')
  async listKeys(@Query() query: unknown): Promise<AdminKeyList> {
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

  @Admin('write')
  @Post('keys/:key/revoke')
  @HttpCode(200)
  async revoke(@Actor() actor: AdminActor, @Param('key') ref: string): Promise<AdminKey> {
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
    await this.invalidate.changed('keys');
    return keyView(after);
  }

  /**
   * Rotation: a new key for the same member with the same name and limit overrides; the old key is
   * revoked at once. The new key is in this answer only.
   */
  @Admin('write')
  @Post('keys/:key/rotate')
  async rotate(@Actor() actor: AdminActor, @Param('key') ref: string): Promise<MintedKey> {
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
    await this.invalidate.changed('keys');
    return { object: 'api_key.secret', key, record: keyView(record) };
  }

  @Admin('write')
  @Put('keys/:key/limits')
  async setLimits(
    @Actor() actor: AdminActor,
    @Param('key') ref: string,
    @Body() body: unknown,
  ): Promise<AdminKey> {
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
    await this.invalidate.changed('keys');
    return keyView(after);
  }

  @Admin('read')
  @Get('models')
  async models() {
    const rows = await this.db.model.findMany({
      orderBy: [{ enabled: 'desc' }, { rank: 'asc' }, { id: 'asc' }],
    });
    return {
      object: 'list' as const,
      data: rows.map((r) => ({
        object: 'admin.model' as const,
        id: r.id,
        kind: r.kind,
        rank: r.rank,
        tiers: r.tiers,
        enabled: r.enabled,
        capabilities: r.capabilities,
        engine: engineType(r.engine),
        context_window: r.contextWindow,
        updated_at: secs(r.updatedAt),
      })),
    };
  }

  @Admin('write')
  @Patch('models/:id')
  async setModel(@Actor() actor: AdminActor, @Param('id') id: string, @Body() body: unknown) {
    const { enabled } = parseOrThrow(UpdateModelRequestSchema, body ?? {});
    const before = await this.db.model.findUnique({ where: { id } });
    if (!before) throw notFound('model', id, 'id');
    const after = await this.access.audited(
      actor,
      (tx) => tx.model.update({ where: { id }, data: { enabled } }),
      (after) =>
        before.enabled === enabled
          ? null
          : {
              action: enabled ? 'model.enable' : 'model.disable',
              targetType: 'model',
              targetId: id,
              before: { enabled: before.enabled },
              after: { enabled: after.enabled },
            },
    );
    // Every gateway reloads its catalog now (CATALOG_REFRESH_MS stays the fallback).
    await this.invalidate.changed('catalog');
    return { object: 'admin.model' as const, id, enabled: after.enabled };
  }
}

function engineType(engine: unknown): string | null {
  const t = (engine as { type?: unknown } | null)?.type;
  return typeof t === 'string' ? t : null;
}
