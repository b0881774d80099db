import { ApiError, type Tier } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { CATALOG_SOURCE, LOGGER } from '../infra/tokens.js';
import { CatalogSnapshot, type CatalogSource } from './catalog.js';

/** Holds the current catalog snapshot; reloads it from PostgreSQL in the background. */
@Injectable()
export class CatalogService implements OnModuleInit, OnApplicationShutdown {
  private snap = new CatalogSnapshot([]);
  private timer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(CATALOG_SOURCE) private readonly source: CatalogSource,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  get current(): CatalogSnapshot {
    return this.snap;
  }

  /**
   * Refuses a key's model allow-list that names a model the member's tier does not reach (400, param
   * `allowed_models`): the list narrows the tier, it never widens it.
   */
  assertWithinTier(tier: Tier, ids: readonly string[] | undefined): void {
    if (!ids?.length) return;
    const outside = this.snap.outsideTier(tier, ids);
    if (outside.length)
      throw ApiError.invalid(
        `allowed_models may only name enabled models the ${tier} tier reaches; not ${outside.join(', ')}.`,
        'allowed_models',
      );
  }

  async onModuleInit(): Promise<void> {
    await this.reload();
    if (this.snap.size === 0)
      this.log.warn('the model catalog is empty: run `npm run admin -- catalog sync`');
    this.timer = setInterval(() => {
      this.reload().catch((err) =>
        this.log.warn({ err }, 'catalog refresh failed; keeping the previous one'),
      );
    }, this.config.CATALOG_REFRESH_MS);
    this.timer.unref();
  }

  async reload(): Promise<void> {
    this.snap = new CatalogSnapshot(await this.source.listEnabled());
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
