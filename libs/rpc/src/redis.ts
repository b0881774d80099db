import type { Logger } from '@infer/telemetry';
import calculateSlot from 'cluster-key-slot';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';

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

/**
 * Where Redis is, from a REDIS_URL:
 *   redis://[user:pass@]host:port[/db]              one primary (or a proxy in front of one)
 *   rediss://...                                    the same over TLS
 *   redis+cluster://[user:pass@]h1:p1,h2:p2,...      a Redis Cluster: any reachable nodes of it (the
 *   rediss+cluster://...                             client discovers the rest); TLS with rediss+
 */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | {
      kind: 'cluster';
      nodes: { host: string; port: number }[];
      username?: string;
      password?: string;
      tls: boolean;
    };

const CLUSTER_SCHEME = /^(rediss?)\+cluster:\/\/(.*)$/i;

/** Parses and checks a REDIS_URL; throws an Error that says what is wrong (for start-up validation). */
export function parseRedisUrl(url: string): RedisTarget {
  const m = CLUSTER_SCHEME.exec(url.trim());
  if (!m) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new Error('REDIS_URL is not a URL (redis://host:port or redis+cluster://h1:p1,h2:p2)');
    }
    if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
      throw new Error(
        `REDIS_URL scheme "${u.protocol}" is not supported: use redis://, rediss://, redis+cluster:// or rediss+cluster://`,
      );
    return { kind: 'single', url };
  }
  const tls = m[1]!.toLowerCase() === 'rediss';
  let rest = m[2]!;
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const cred = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = cred.indexOf(':');
    username = decodeURIComponent(colon >= 0 ? cred.slice(0, colon) : cred) || undefined;
    password = colon >= 0 ? decodeURIComponent(cred.slice(colon + 1)) : undefined;
  }
  rest = rest.replace(/[/?#].*$/, '');
  const nodes = rest
    .split(',')
    .filter((s) => s.length > 0)
    .map((hp) => {
      const i = hp.lastIndexOf(':');
      const host = (i > 0 ? hp.slice(0, i) : hp).replace(/^\[(.*)\]$/, '$1');
      const port = i > 0 ? Number(hp.slice(i + 1)) : 6379;
      if (!host || !Number.isInteger(port) || port < 1 || port > 65535)
        throw new Error(`REDIS_URL cluster node "${hp}" is not host:port`);
      return { host, port };
    });
  if (!nodes.length)
    throw new Error('REDIS_URL redis+cluster:// names no node (redis+cluster://h1:p1,h2:p2)');
  return {
    kind: 'cluster',
    nodes,
    tls,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
  };
}

/** Options for createRedisClient: ioredis's, plus what a cluster needs on top. */
export type RedisClientOptions = RedisOptions & {
  /** Cluster only: ioredis Cluster options (slot refresh, retries) merged over the defaults. */
  cluster?: Partial<ClusterOptions>;
};

/**
 * One Redis client for a REDIS_URL: an ioredis `Redis` for one primary, an ioredis `Cluster` for
 * `redis+cluster://` (typed as Redis: both have the same command API, pipelines, defineCommand and
 * duplicate(); callers must keep every multi-key command, transaction and script within one hash slot,
 * with a `{tag}` in the keys, which is what all of this repository does). For a cluster the options
 * apply to every node connection, and `enableOfflineQueue` / `enableAutoPipelining` /
 * `autoPipeliningIgnoredCommands` / `lazyConnect` to the cluster client.
 */
export function createRedisClient(url: string, options: RedisClientOptions = {}): Redis {
  const target = parseRedisUrl(url);
  const { cluster: clusterOpts, ...opts } = options;
  if (target.kind === 'single') return new Redis(url, opts);
  const {
    enableOfflineQueue,
    enableAutoPipelining,
    autoPipeliningIgnoredCommands,
    lazyConnect,
    ...nodeOpts
  } = opts;
  const client = new Cluster(target.nodes, {
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(enableAutoPipelining !== undefined ? { enableAutoPipelining } : {}),
    ...(autoPipeliningIgnoredCommands !== undefined ? { autoPipeliningIgnoredCommands } : {}),
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    scaleReads: 'master',
    // Fail over quickly: a moved slot or a promoted replica is picked up within a few hundred ms.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    slotsRefreshTimeout: 1_000,
    slotsRefreshInterval: 5_000,
    ...clusterOpts,
    redisOptions: {
      ...nodeOpts,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
      ...clusterOpts?.redisOptions,
    },
  });
  return client as unknown as Redis;
}

/**
 * A new connection like `client` (same target and options) with auto-pipelining off, for BullMQ and any
 * other user that registers Lua commands (`defineCommand`) on a connection: ioredis's auto-pipeline
 * copies the defined commands into each pipeline when it makes it, so a command defined while a
 * pipeline is waiting for its tick is missing from that pipeline, and the reply loop then throws an
 * uncaught TypeError that ends the process (redis/ioredis#1931).
 */
export function withoutAutoPipelining(client: Redis): Redis {
  const c: unknown = client;
  if (c instanceof Cluster) return c.duplicate([], { enableAutoPipelining: false }) as unknown as Redis;
  return client.duplicate({ enableAutoPipelining: false });
}

/** True when a client made by createRedisClient talks to a Redis Cluster. */
export function isRedisCluster(client: unknown): boolean {
  return client instanceof Cluster;
}

/**
 * A BullMQ prefix that keeps each queue's keys in one Redis Cluster hash slot: BullMQ's scripts touch
 * several keys of a queue at once, so on a cluster the prefix must hold a `{hash tag}` (BullMQ's docs:
 * "Redis Cluster"). A prefix that has one already is kept; otherwise `prefix` becomes `{prefix}`.
 */
export function clusterSafeQueuePrefix(prefix: string): string {
  return /\{[^}]+\}/.test(prefix) ? prefix : `{${prefix}}`;
}

/** The Redis Cluster hash slot (0..16383) of a key (CRC16 of its `{hash tag}` when it has one). */
export function redisSlot(key: string): number {
  return calculateSlot(key);
}

/** REDIS_URL of every app: one primary (redis://, rediss://) or a cluster (redis+cluster://h1:p1,...). */
export const RedisUrlSchema = z
  .string()
  .default('redis://127.0.0.1:6379')
  .superRefine((url, ctx) => {
    try {
      parseRedisUrl(url);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  })
  .describe(
    'Redis: one primary (redis://, rediss://) or a Redis Cluster (redis+cluster://h1:p1,h2:p2; docs/deployment.md, "Redis capacity").',
  );

/** The BullMQ prefix to use: on a Redis Cluster, one with a hash tag (clusterSafeQueuePrefix). */
export function queuePrefixFor(redisUrl: string, prefix: string): string {
  return parseRedisUrl(redisUrl).kind === 'cluster' ? clusterSafeQueuePrefix(prefix) : prefix;
}

/**
 * BullMQ's `connection` for a REDIS_URL: connection options for one primary (BullMQ opens and closes
 * its own connections, as before), or a Cluster client for a cluster (BullMQ duplicates it for its
 * blocking connections). BullMQ wants no per-request retry limit on them.
 */
export function bullConnection(redisUrl: string): Redis | { url: string; maxRetriesPerRequest: null } {
  if (parseRedisUrl(redisUrl).kind === 'single') return { url: redisUrl, maxRetriesPerRequest: null };
  return createRedisClient(redisUrl, { maxRetriesPerRequest: null });
}
