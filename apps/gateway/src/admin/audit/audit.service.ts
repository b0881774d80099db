import { type AuditList, AuditQuerySchema, parseOrThrow } from '@infer/contracts';
import { AuditRepository } from '@infer/persistence/lazy';
import { Inject, Injectable } from '@nestjs/common';
import { auditView } from '../views.js';

/** The audit log, newest first, filtered by actor, action, target and time. */
@Injectable()
export class AuditService {
  constructor(@Inject(AuditRepository) private readonly auditLog: AuditRepository) {}

  async list(query: unknown): Promise<AuditList> {
    const q = parseOrThrow(AuditQuerySchema, query ?? {});
    const page = await this.auditLog.list({
      ...(q.actor ? { actorId: q.actor } : {}),
      ...(q.action ? { action: q.action } : {}),
      ...(q.target_type ? { targetType: q.target_type } : {}),
      ...(q.target_id ? { targetId: q.target_id } : {}),
      ...(q.from ? { from: q.from } : {}),
      ...(q.to ? { to: q.to } : {}),
      ...(q.before ? { before: BigInt(q.before) } : {}),
      limit: q.limit,
    });
    return { object: 'list', data: page.rows.map(auditView), next_before: page.nextBefore };
  }
}
