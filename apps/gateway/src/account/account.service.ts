import {
  type AccountKey,
  type AccountKeyList,
  type AccountMember,
  type AccountMintedKey,
  ApiError,
  CreateAccountKeyRequestSchema,
  ErrorType,
  parseDuration,
  parseOrThrow,
  RotateKeyRequestSchema,
  type SelfUsage,
  TIERS,
} from '@infer/contracts';
import { type ApiKeyInfo, ApiKeysRepository, type Db, type Member } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { CatalogService } from '../catalog/catalog.service.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { KEYS_CHANGED, type KeysChanged, PRISMA } from '../infra/tokens.js';
import { Routes } from '../openai/routes.js';
import { SelfUsageService } from '../usage/self-usage.service.js';
import type { MemberActor } from './account-access.js';
import { AccountAccess } from './account-access.service.js';

const secs = (d: Date) => Math.floor(d.getTime() / 1000);

export function accountKeyView(k: ApiKeyInfo, now = Date.now()): AccountKey {
  const until = k.oldSecrets[0]?.graceUntil;
  return {
    object: 'api_key',
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    created_at: secs(k.createdAt),
    last_used_at: k.lastUsedAt ? secs(k.lastUsedAt) : null,
    revoked_at: k.revokedAt ? secs(k.revokedAt) : null,
    expires_at: k.expiresAt ? secs(k.expiresAt) : null,
    allowed_models: k.allowedModels,
    rotated_at: k.rotatedAt ? secs(k.rotatedAt) : null,
    old_secret_valid_until: until && until.getTime() > now && !k.revokedAt ? secs(until) : null,
  };
}

const isLive = (k: ApiKeyInfo, now = Date.now()) =>
  !k.revokedAt && (!k.expiresAt || k.expiresAt.getTime() > now);

const keyAudit = (k: ApiKeyInfo) => ({
  member_id: k.memberId,
  name: k.name,
  prefix: k.prefix,
  revoked: Boolean(k.revokedAt),
  expires_at: k.expiresAt?.toISOString() ?? null,
});

/** A key that is not the member's answers exactly like a key that does not exist. */
const noSuchKey = (ref: string) =>
  new ApiError(404, `You have no API key '${ref}'.`, {
    type: ErrorType.invalidRequest,
    code: 'key_not_found',
    param: 'key',
  });

/**
 * What a signed-in member may do with their own account: see their tier and what it reaches, list,
 * create, rotate and revoke their own keys (at most MEMBER_MAX_KEYS live ones), and read their usage.
 * Every member and key id comes from the session, never from the request; a key id in a path is
 * checked against the session's member before anything is read or changed. Changes are audited with
 * the member as actor and reach every gateway at once (the admin path's key-cache invalidation).
 */
@Injectable()
export class AccountService {
  private readonly keys: ApiKeysRepository;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(PRISMA) db: Db,
    @Inject(AccountAccess) private readonly access: AccountAccess,
    @Inject(KEYS_CHANGED) private readonly invalidate: KeysChanged,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(SelfUsageService) private readonly usage: SelfUsageService,
  ) {
    this.keys = new ApiKeysRepository(db);
  }

  memberView(m: Member): AccountMember {
    const tierRank = TIERS.indexOf(m.tier);
    const routes = Object.values(Routes);
    return {
      object: 'member',
      id: m.id,
      name: m.name,
      email: m.email,
      tier: m.tier,
      models: this.catalog.current.listFor(m.tier).data.map((model) => {
        const kind = this.catalog.current.get(model.id)?.kind ?? 'chat';
        const endpoints = routes
          .filter(
            (r) =>
              (r.kinds as readonly string[]).includes(kind) &&
              (!('minTier' in r) || !r.minTier || tierRank >= TIERS.indexOf(r.minTier)),
          )
          .map((r) => r.endpoint);
        return { id: model.id, kind, endpoints: [...new Set(endpoints)] };
      }),
    };
  }

  async list(actor: MemberActor): Promise<AccountKeyList> {
    const all = await this.keys.list(actor.id);
    const now = Date.now();
    return {
      object: 'list',
      // Newest first, revoked ones after the live ones.
      data: all
        .slice()
        .sort((a, b) => Number(!isLive(a, now)) - Number(!isLive(b, now)) || +b.createdAt - +a.createdAt)
        .map((k) => accountKeyView(k, now)),
      live: all.filter((k) => isLive(k, now)).length,
      max_live: this.config.MEMBER_MAX_KEYS,
    };
  }

  async create(actor: MemberActor, body: unknown): Promise<AccountMintedKey> {
    const input = parseOrThrow(CreateAccountKeyRequestSchema, body ?? {});
    const max = this.config.MEMBER_MAX_KEYS;
    const { key, record } = await this.access.audited(
      actor,
      async (tx) => {
        // One member's creations queue on their row: the count below cannot be raced past the cap.
        await tx.$executeRaw`SELECT 1 FROM "Member" WHERE "id" = ${actor.id} FOR UPDATE`;
        const live = await tx.apiKey.count({
          where: {
            memberId: actor.id,
            revokedAt: null,
            OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }],
          },
        });
        if (live >= max) {
          throw new ApiError(
            409,
            `You already have ${live} live API keys, the most allowed (${max}). Revoke one first.`,
            { type: ErrorType.invalidRequest, code: 'too_many_keys', param: null },
          );
        }
        return new ApiKeysRepository(tx).mint(actor.id, input.name, {
          ...(input.expires_in
            ? { expiresAt: new Date(Date.now() + (parseDuration(input.expires_in) ?? 0)) }
            : {}),
        });
      },
      ({ record }) => ({
        action: 'key.create',
        targetType: 'api_key',
        targetId: record.id,
        after: keyAudit(record),
      }),
    );
    return { object: 'api_key.secret', key, record: accountKeyView(record) };
  }

  /** The member's own key by id or prefix (404 for anyone else's, exactly as for none). */
  private async own(actor: MemberActor, ref: string): Promise<ApiKeyInfo> {
    const found = ref.includes('\u0000') || ref.length > 100 ? null : await this.keys.find(ref);
    if (!found || found.memberId !== actor.id) throw noSuchKey(ref);
    return found;
  }

  async revoke(actor: MemberActor, ref: string): Promise<AccountKey> {
    const before = await this.own(actor, ref);
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
    return accountKeyView(after);
  }

  async rotate(actor: MemberActor, ref: string, body: unknown): Promise<AccountMintedKey> {
    const { grace } = parseOrThrow(RotateKeyRequestSchema, body ?? {});
    const graceMs = parseDuration(grace) ?? 0;
    const old = await this.own(actor, ref);
    if (old.revokedAt) {
      throw new ApiError(409, 'A revoked key cannot be rotated; create a new one.', {
        type: ErrorType.invalidRequest,
        code: 'key_revoked',
        param: 'key',
      });
    }
    const { key, record } = await this.access.audited(
      actor,
      (tx) => new ApiKeysRepository(tx).rotate(old.id, graceMs),
      ({ record }) => ({
        action: 'key.rotate',
        targetType: 'api_key',
        targetId: old.id,
        before: keyAudit(old),
        after: { ...keyAudit(record), old_prefix: old.prefix, grace },
      }),
    );
    await this.invalidate.keysChanged({ keyIds: [old.id] });
    return { object: 'api_key.secret', key, record: accountKeyView(record) };
  }

  usageOf(actor: MemberActor): Promise<SelfUsage> {
    const m = actor.session.member;
    return this.usage.read({ memberId: m.id, tier: m.tier, billingAnchor: m.billingPeriodAnchor, key: null });
  }
}
