// Tells every gateway replica that the CLI changed something they cache (keys, members, limits, the
// catalog), on the same core NATS subject the console's admin API uses (apps/gateway/src/admin/
// invalidation.service.ts). Best effort: when NATS cannot be reached within a second, the gateways follow at
// their cache TTLs (KEY_CACHE_TTL_MS, CATALOG_REFRESH_MS) and the CLI says so.
import { randomUUID } from 'node:crypto';
import {
  encodeAdminInvalidation,
  GatewaySubjects,
  type InvalidationScope,
  type InvalidationTarget,
} from '@infer/contracts';
import { connect } from '@nats-io/transport-node';

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
const CONNECT_TIMEOUT_MS = 1000;

export interface AnnounceResult {
  announced: boolean;
  /** Why not, when announced is false. */
  reason?: string;
}

/**
 * Publishes `{scopes, origin}` on `<MODEL_SUBJECT_PREFIX>infer.gateway.invalidate` of `NATS_URL`
 * (default nats://127.0.0.1:4222) and waits for the server to have it (flush). Never throws.
 */
export async function announceChange(
  env: NodeJS.ProcessEnv,
  scopes: InvalidationScope[],
  /** The keys and members a `keys` change touched (only their cached lookups are dropped). */
  target: InvalidationTarget = {},
): Promise<AnnounceResult> {
  const servers = (env.NATS_URL || DEFAULT_NATS_URL).split(',').map((s) => s.trim());
  const subject = (env.MODEL_SUBJECT_PREFIX ?? '') + GatewaySubjects.invalidate;
  let nc: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    nc = await connect({
      servers,
      name: 'admin-cli',
      timeout: CONNECT_TIMEOUT_MS,
      reconnect: false,
      maxReconnectAttempts: 0,
    });
    nc.publish(
      subject,
      encodeAdminInvalidation({
        scopes,
        origin: `admin-cli:${randomUUID()}`,
        key_ids: target.keyIds?.slice(),
        member_ids: target.memberIds?.slice(),
      }),
    );
    await nc.flush();
    return { announced: true };
  } catch (err) {
    return { announced: false, reason: (err as Error)?.message ?? String(err) };
  } finally {
    await nc?.close().catch(() => undefined);
  }
}
