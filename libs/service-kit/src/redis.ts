import type { Logger } from './logger.js';

/** What watchRedis needs of a client (ioredis's Redis and Cluster both have it). */
interface Emitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * Gives a Redis client an error listener, so a Redis outage is logged (at most once per `everyMs`
 * per client) instead of printed as "Unhandled error event" by ioredis. The client keeps reconnecting
 * by itself; whoever calls it sees the command errors and answers them (503s).
 */
export function watchRedis<C extends Emitter>(client: C, log: Logger, name: string, everyMs = 10_000): C {
  let last = 0;
  let suppressed = 0;
  client.on('error', (err: Error) => {
    const now = Date.now();
    if (now - last < everyMs) {
      suppressed++;
      return;
    }
    last = now;
    log.warn({ redis: name, err: err.message, suppressed }, 'redis connection error');
    suppressed = 0;
  });
  return client;
}

/**
 * ioredis options for request paths that must fail fast when Redis is unreachable: no offline queue
 * (a command while disconnected fails at once instead of waiting for the reconnect) and a command
 * timeout (a Redis that hangs fails the command after `timeoutMs`).
 */
export function failFastRedisOptions(timeoutMs = 1_000) {
  return { enableOfflineQueue: false, commandTimeout: timeoutMs, maxRetriesPerRequest: 1 } as const;
}
