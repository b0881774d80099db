import {
  type ModelPools,
  type OpsStatusReply,
  parseOrThrow,
  StatusSubjects,
  UpdateModelRequestSchema,
} from '@infer/contracts';
import type { Db } from '@infer/persistence/lazy';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, type GatewayConfig } from '../../config.js';
import { NATS, PRISMA } from '../../infra/tokens.js';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';
import { AdminInvalidation } from '../invalidation.service.js';
import { notFound } from '../user-error.js';
import { secs } from '../views.js';
import { mergePools } from './pools.js';

/** How long the gateway collects the service replicas' answers to an `engine-pools` request. */
const POOLS_WINDOW_MS = 300;
const utf8 = new TextDecoder();

/** The model catalog as stored (disabled models included); enabling or disabling is audited. */
@Injectable()
export class ModelsAdminService {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(AdminAccess) private readonly access: AdminAccess,
    @Inject(AdminInvalidation) private readonly invalidate: AdminInvalidation,
    @Inject(NATS) private readonly nc: NatsConnection,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /**
   * Each model's engine endpoints: one request on StatusSubjects.opsStatus('engine-pools') (this
   * stack's subject prefix), every service replica holding pools answers its document, collected for
   * 300 ms, merged (pools.ts).
   */
  async pools(): Promise<ModelPools> {
    const replies: OpsStatusReply[] = [];
    const subject = this.config.MODEL_SUBJECT_PREFIX + StatusSubjects.opsStatus('engine-pools');
    try {
      const msgs = await this.nc.requestMany(subject, undefined, {
        strategy: 'timer',
        maxWait: POOLS_WINDOW_MS,
      });
      for await (const msg of msgs) {
        try {
          const r = JSON.parse(utf8.decode(msg.data)) as OpsStatusReply;
          if (r && typeof r.instance === 'string') replies.push(r);
        } catch {
          // not JSON: ignored
        }
      }
    } catch {
      // no responders (no service holds pools) or NATS down: what arrived
    }
    return mergePools(replies);
  }

  async list() {
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
        log_bodies: r.logBodies,
        updated_at: secs(r.updatedAt),
      })),
    };
  }

  /** PATCH {enabled?, log_bodies?}: each change its own audit row (none when nothing changed). */
  async setEnabled(actor: AdminActor, id: string, body: unknown) {
    const { enabled, log_bodies } = parseOrThrow(UpdateModelRequestSchema, body ?? {});
    const before = await this.db.model.findUnique({ where: { id } });
    if (!before) throw notFound('model', id, 'id');
    let after = before;
    if (enabled !== undefined)
      after = await this.access.audited(
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
    if (log_bodies !== undefined)
      after = await this.access.audited(
        actor,
        (tx) => tx.model.update({ where: { id }, data: { logBodies: log_bodies } }),
        (after) =>
          before.logBodies === log_bodies
            ? null
            : {
                action: log_bodies ? 'model.log_bodies_on' : 'model.log_bodies_off',
                targetType: 'model',
                targetId: id,
                before: { log_bodies: before.logBodies },
                after: { log_bodies: after.logBodies },
              },
      );
    // Every gateway reloads its catalog now (CATALOG_REFRESH_MS stays the fallback).
    await this.invalidate.changed('catalog');
    return { object: 'admin.model' as const, id, enabled: after.enabled, log_bodies: after.logBodies };
  }
}

function engineType(engine: unknown): string | null {
  const t = (engine as { type?: unknown } | null)?.type;
  return typeof t === 'string' ? t : null;
}
