import type { DbClient } from './db.js';
import type { Prisma } from './prisma.js';
import { PrismaSql } from './sql-tag.js';

const { DbNull } = PrismaSql;

export interface AuditActor {
  /** `member`: a member acting on their own account (account pages). */
  type: 'operator' | 'token' | 'cli' | 'member';
  id?: string | null;
  label: string;
  ip?: string | null;
}

export interface AuditEntry {
  action: string;
  targetType: string;
  targetId?: string | null;
  before?: unknown;
  after?: unknown;
}

export interface AuditRow {
  id: string;
  at: Date;
  actorType: string;
  actorId: string | null;
  actorLabel: string;
  action: string;
  targetType: string;
  targetId: string | null;
  before: unknown;
  after: unknown;
  ip: string | null;
}

export interface AuditQuery {
  actorId?: string;
  /** Exact action, or a prefix ending in `.` (`member.` = every member action). */
  action?: string;
  targetType?: string;
  targetId?: string;
  from?: Date;
  to?: Date;
  /** Rows older than this id (cursor from the previous page). */
  before?: bigint;
  limit: number;
}

/**
 * Field names whose values never go into the audit log (they are replaced by "[redacted]"): passwords,
 * secrets, hashes, credentials named `...token` (token, access_token, id_token) or `...key` (key,
 * api_key, secret_key), whole words only, so limit values such as `tokens_per_minute` stay. A `key`
 * or `...Key` field is redacted only when it holds a string (a credential): the limits' `key` scope
 * is an object of limit values and is kept.
 */
const SECRET_NAME =
  /(^|[_-])pass(word)?$|^pass|secret|hash|(^|[_-])token$|^[a-z]*Token$|^authorization$|^cookie$/i;
const KEY_NAME = /(^|[_-])key$|^[a-z]*Key$/;
const isSecret = (k: string, v: unknown) =>
  SECRET_NAME.test(k) || (typeof v === 'string' && KEY_NAME.test(k));

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return value.toString();
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[k] = v !== null && v !== undefined && isSecret(k, v) ? '[redacted]' : redactSecrets(v);
    return out;
  }
  return value;
}

const json = (v: unknown) =>
  v === undefined || v === null ? DbNull : (redactSecrets(v) as Prisma.InputJsonValue);

/**
 * The audit log: append and read, nothing else. The table refuses UPDATE, DELETE and TRUNCATE
 * (triggers in the operator_console migration).
 */
export class AuditRepository {
  constructor(private readonly db: DbClient) {}

  async append(actor: AuditActor, entry: AuditEntry): Promise<void> {
    await this.db.auditEvent.create({
      data: {
        actorType: actor.type,
        actorId: actor.id ?? null,
        actorLabel: actor.label,
        ip: actor.ip ?? null,
        action: entry.action,
        targetType: entry.targetType,
        targetId: entry.targetId ?? null,
        before: json(entry.before),
        after: json(entry.after),
      },
    });
  }

  /** Newest first, keyset-paged on id (`before` = the last id of the previous page). */
  async list(q: AuditQuery): Promise<{ rows: AuditRow[]; nextBefore: string | null }> {
    const where: Prisma.AuditEventWhereInput = {
      ...(q.actorId ? { actorId: q.actorId } : {}),
      ...(q.action
        ? q.action.endsWith('.')
          ? { action: { startsWith: q.action } }
          : { action: q.action }
        : {}),
      ...(q.targetType ? { targetType: q.targetType } : {}),
      ...(q.targetId ? { targetId: q.targetId } : {}),
      ...(q.from || q.to
        ? { at: { ...(q.from ? { gte: q.from } : {}), ...(q.to ? { lt: q.to } : {}) } }
        : {}),
      ...(q.before !== undefined ? { id: { lt: q.before } } : {}),
    };
    const found = await this.db.auditEvent.findMany({ where, orderBy: { id: 'desc' }, take: q.limit + 1 });
    const page = found.slice(0, q.limit);
    return {
      rows: page.map((r) => ({ ...r, id: r.id.toString() })),
      nextBefore: found.length > q.limit ? (page.at(-1)?.id.toString() ?? null) : null,
    };
  }
}
