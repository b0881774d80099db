import type { AuditEventSchema, OperatorView } from '@infer/contracts';
import type { AuditRow, Operator } from '@infer/persistence/lazy';
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
