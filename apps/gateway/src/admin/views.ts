import {
  type AdminKey,
  type AdminMember,
  type AuditEventSchema,
  LimitsOverrideSchema,
  type MemberLimits,
  MemberLimitsSchema,
  type OperatorView,
} from '@infer/contracts';
import type { ApiKeyInfo, AuditRow, Member, Operator } from '@infer/persistence/lazy';
import type { z } from 'zod';

export function operatorView(op: Operator): OperatorView {
  return {
    object: 'operator',
    id: op.id,
    email: op.email,
    role: op.role,
    disabled: Boolean(op.disabledAt),
    sso_only: !op.passwordHash,
    created_at: Math.floor(+op.createdAt / 1000),
    last_login_at: op.lastLoginAt ? Math.floor(+op.lastLoginAt / 1000) : null,
  };
}

/** What the audit log keeps of an operator (no password hash). */
export function operatorAudit(op: Operator) {
  return { email: op.email, role: op.role, disabled: Boolean(op.disabledAt) };
}

export function auditView(r: AuditRow): z.infer<typeof AuditEventSchema> {
  return {
    id: r.id,
    at: +r.at,
    actor: { type: r.actorType, id: r.actorId, label: r.actorLabel },
    action: r.action,
    target: { type: r.targetType, id: r.targetId },
    before: r.before ?? null,
    after: r.after ?? null,
    ip: r.ip,
  };
}

export const secs = (d: Date) => Math.floor(+d / 1000);

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
    limits: memberLimitsOf(m.limits),
    log_bodies: m.logBodies,
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
    expires_at: k.expiresAt ? secs(k.expiresAt) : null,
    allowed_models: k.allowedModels,
    allowed_ips: k.allowedIps,
    rotated_at: k.rotatedAt ? secs(k.rotatedAt) : null,
    old_secret_valid_until: oldSecretValidUntil(k),
  };
}

/** The latest grace end of the key's old secrets, while it is in the future (unix seconds). */
function oldSecretValidUntil(k: ApiKeyInfo, now = Date.now()): number | null {
  const until = k.oldSecrets[0]?.graceUntil;
  return until && until.getTime() > now && !k.revokedAt ? secs(until) : null;
}

export const memberAudit = (m: Member) => ({
  name: m.name,
  email: m.email,
  tier: m.tier,
  billing_anchor: m.billingPeriodAnchor.toISOString(),
  suspended: Boolean(m.suspendedAt),
  limits: m.limits ?? null,
  log_bodies: m.logBodies,
});

/** A member's stored limits as the API shows them (null: none, or a shape this version does not know). */
export function memberLimitsOf(v: unknown): MemberLimits | null {
  const parsed = MemberLimitsSchema.safeParse(v ?? undefined);
  return parsed.success ? parsed.data : null;
}
export const keyAudit = (k: ApiKeyInfo) => ({
  member_id: k.memberId,
  name: k.name,
  prefix: k.prefix,
  revoked: Boolean(k.revokedAt),
  limits: k.limits ?? null,
  expires_at: k.expiresAt?.toISOString() ?? null,
  allowed_models: k.allowedModels,
  allowed_ips: k.allowedIps,
});
