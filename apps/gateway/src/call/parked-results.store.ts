import type { Logger } from '@infer/telemetry';
import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { LOGGER, REDIS } from '../infra/tokens.js';

/** Results too large for one NATS message, parked in Redis by a service (long speech): taken once. */
@Injectable()
export class ParkedResults {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  /** Reads and deletes the bytes (null when they expired or Redis failed). */
  async take(key: string): Promise<Buffer | null> {
    try {
      const buf = await this.redis.getBuffer(key);
      await this.redis.del(key);
      return buf;
    } catch (err) {
      this.log.error({ err }, 'could not read a parked result from Redis');
      return null;
    }
  }
}
