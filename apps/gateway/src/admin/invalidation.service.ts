import { randomUUID } from 'node:crypto';
import {
  AdminInvalidationSchema,
  encodeAdminInvalidation,
  GatewaySubjects,
  type InvalidationScope,
  type InvalidationTarget,
} from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { KeyCache } from '../auth/key-cache.js';
import { CatalogService } from '../catalog/catalog.service.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { LOGGER, NATS } from '../infra/tokens.js';

/**
 * Makes an admin change apply on every gateway replica at once. The gateway that made the change
 * applies it to its own caches, then publishes `{scopes, origin}` on a core NATS subject that every
 * gateway subscribes to (no queue group); the others drop the cached lookups of the keys and members
 * the change touched (tier, billing anchor, suspension, revocation and limit overrides all travel with
 * the key; other keys keep theirs) and/or reload the model catalog. Core NATS is at-most-once: a gateway that misses a message (NATS down, just
 * reconnecting) still follows within KEY_CACHE_TTL_MS and CATALOG_REFRESH_MS, as before.
 */
@Injectable()
export class AdminInvalidation implements OnModuleInit, OnApplicationShutdown {
  /** This gateway's id in the messages, so it skips its own. */
  readonly instanceId = randomUUID();
  private readonly subject: string;
  private sub: Subscription | undefined;
  private received = 0;

  constructor(
    @Inject(NATS) private readonly nc: NatsConnection,
    @Inject(KeyCache) private readonly keyCache: KeyCache,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    // MODEL_SUBJECT_PREFIX isolates test stacks sharing one NATS (empty in production).
    this.subject = config.MODEL_SUBJECT_PREFIX + GatewaySubjects.invalidate;
  }

  /** Messages applied from other gateways (for tests and diagnostics). */
  get appliedFromPeers(): number {
    return this.received;
  }

  onModuleInit(): void {
    this.sub = this.nc.subscribe(this.subject, {
      callback: (err, msg) => {
        if (err) {
          this.log.warn({ err }, 'admin invalidation subscription failed; caches fall back to their TTLs');
          return;
        }
        const parsed = AdminInvalidationSchema.safeParse(safeJson(msg.string()));
        if (!parsed.success) {
          this.log.warn({ subject: msg.subject }, 'ignored a malformed admin invalidation message');
          return;
        }
        if (parsed.data.origin === this.instanceId) return;
        this.received++;
        void this.apply(parsed.data.scopes, {
          keyIds: parsed.data.key_ids ?? [],
          memberIds: parsed.data.member_ids ?? [],
        });
      },
    });
  }

  /** Applies a change here, then tells the other gateways (never throws: TTLs are the fallback). */
  async changed(...scopes: InvalidationScope[]): Promise<void> {
    await this.publish(scopes, {});
  }

  /**
   * A change to some keys or members (tier, suspension, revocation, limit overrides): only their cached
   * lookups are dropped, here and on every gateway; the other keys keep theirs.
   */
  async keysChanged(target: InvalidationTarget): Promise<void> {
    await this.publish(['keys'], target);
  }

  private async publish(scopes: InvalidationScope[], target: InvalidationTarget): Promise<void> {
    await this.apply(scopes, target);
    try {
      this.nc.publish(
        this.subject,
        encodeAdminInvalidation({
          scopes,
          origin: this.instanceId,
          key_ids: target.keyIds?.slice(),
          member_ids: target.memberIds?.slice(),
        }),
      );
    } catch (err) {
      this.log.warn(
        { err, scopes },
        'could not publish an admin invalidation; other gateways follow at their TTL',
      );
    }
  }

  private async apply(scopes: InvalidationScope[], target: InvalidationTarget): Promise<void> {
    if (scopes.includes('keys')) this.keyCache.invalidate(target.keyIds, target.memberIds);
    if (scopes.includes('catalog')) {
      await this.catalog.reload().catch((err: unknown) => {
        this.log.warn({ err }, 'catalog reload after an admin change failed; the periodic refresh retries');
      });
    }
  }

  onApplicationShutdown(): void {
    this.sub?.unsubscribe();
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
