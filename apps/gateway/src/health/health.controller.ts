import type { Logger } from '@infer/telemetry';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import { Public } from '../auth/public.decorator.js';
import { LOGGER, NATS, PG, REDIS } from '../infra/tokens.js';

interface Pingable {
  query(text: string): Promise<unknown>;
}

const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('timeout')), ms).unref())]);

@Controller()
export class HealthController {
  constructor(
    @Inject(PG) private readonly db: Pingable,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(NATS) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  /** Alive: the process answers. */
  @Public()
  @Get('/healthz')
  healthz() {
    return { status: 'ok' };
  }

  /** Ready: PostgreSQL, Redis and NATS all answer within a second. */
  @Public()
  @Get('/readyz')
  async readyz(@Res() reply: FastifyReply): Promise<void> {
    const [postgres, redis, nats] = await Promise.allSettled([
      within(this.db.query('SELECT 1'), 1000),
      within(this.redis.ping(), 1000),
      within(this.nc.flush(), 1000),
    ]);
    const checks = {
      postgres: postgres.status === 'fulfilled' ? 'ok' : 'down',
      redis: redis.status === 'fulfilled' ? 'ok' : 'down',
      nats: nats.status === 'fulfilled' && !this.nc.isClosed() ? 'ok' : 'down',
    };
    const ready = Object.values(checks).every((v) => v === 'ok');
    if (!ready) this.log.warn({ checks }, 'not ready');
    void reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks });
  }
}
