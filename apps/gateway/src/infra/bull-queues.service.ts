import { withoutAutoPipelining } from '@infer/rpc';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { REDIS } from './tokens.js';

/**
 * The services' BullMQ queues as the gateway's admin routes and the batch API see them (counts, timings,
 * jobs to add, retry or remove): one Queue object per name, made on first use, metadata never written.
 * They share one connection of their own, made with the first queue: BullMQ defines its Lua commands on
 * the connection it is given, which must not be the gateway's auto-pipelined one (withoutAutoPipelining
 * says why). BullMQ itself (about 220 modules) is loaded on the first request that needs it, not at
 * start-up.
 */
@Injectable()
export class BullQueues implements OnModuleDestroy {
  private readonly queues = new Map<string, Queue>();
  private connection: Redis | null = null;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  async get(name: string): Promise<Queue> {
    let q = this.queues.get(name);
    if (!q) {
      const { Queue } = await import('bullmq');
      q = this.queues.get(name); // made by a concurrent call meanwhile
      if (q) return q;
      this.connection ??= withoutAutoPipelining(this.redis);
      q = new Queue(name, {
        connection: this.connection,
        prefix: this.config.BULLMQ_PREFIX,
        skipMetasUpdate: true,
      });
      this.queues.set(name, q);
    }
    return q;
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.queues.clear();
    this.connection?.disconnect();
    this.connection = null;
  }
}
