/**
 * Starts the real stack for an integration test: a fresh PostgreSQL database (migrated, catalog
 * synced from config/models.yaml, one member and key per tier), the chat-service and the gateway
 * in-process against the machine's Redis and NATS. Clients are the official `openai` SDK.
 */
import { randomBytes } from 'node:crypto';
import { UsageStream } from '@infer/contracts';
import {
  ApiKeysRepository,
  CatalogRepository,
  createPrisma,
  dropDatabase,
  ensureDatabase,
  MembersRepository,
  migrateDeploy,
} from '@infer/persistence';
import { connectNats } from '@infer/rpc';
import { jetstreamManager } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import OpenAI from 'openai';

async function deleteStream(name: string | undefined, natsUrl?: string): Promise<void> {
  if (!name) return;
  const nc = await connectNats(natsUrl ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'harness');
  try {
    await (await jetstreamManager(nc)).streams.delete(name).catch(() => undefined);
  } finally {
    await nc.close();
  }
}

import { type ChatService, startChatService } from '../../apps/chat-service/src/app.js';
import { type RunningGateway, startGateway } from '../../apps/gateway/src/app.js';
import { type LedgerWriter, startLedgerWriter } from '../../apps/ledger-writer/src/app.js';

export type TierName = 'community' | 'inference' | 'premium';

export interface Stack {
  url: string;
  baseURL: string;
  databaseUrl: string;
  keys: Record<TierName, string>;
  client(tier: TierName, opts?: Partial<ConstructorParameters<typeof OpenAI>[0]>): OpenAI;
  gateway: RunningGateway;
  /** The environment the gateway was started with (start another replica of it with startGateway). */
  gatewayEnv: NodeJS.ProcessEnv;
  /** Subject root of this stack's usage events (subscribe to `${usageRoot}.>`). */
  usageRoot: string;
  chat: ChatService;
  prisma: ReturnType<typeof createPrisma>;
  close(): Promise<void>;
}

export const PG_ROOT = process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';

export interface StackOptions {
  /** Extra environment for the apps (wins over the test defaults). */
  env?: Record<string, string>;
  /** Catalog file to load instead of config/models.yaml. */
  catalogFile?: string;
  /**
   * More services to start next to the chat-service, each given the apps' environment
   * (e.g. `(env) => startEmbeddingService({ env })`). Stopped in reverse order by close().
   */
  services?: Array<(env: NodeJS.ProcessEnv) => Promise<{ stop(): Promise<void> }>>;
  /** PostgreSQL server URL (without a database) to create the stack's database on; default PG_ROOT. */
  pgRoot?: string;
}

/**
 * The namespaces of one test stack, all named after `tag`: its NATS subjects (model routes, search;
 * its ledger writer's status follows MODEL_SUBJECT_PREFIX, see stackLedgerEnv), its usage stream and subjects, and every Redis key prefix (limits, console, BullMQ queues,
 * images, search cache). So test runs, and a development stack (`scripts/setup.sh`) on the same NATS
 * and Redis, never answer each other, take each other's jobs, share counters or mix usage events.
 * isolation.spec.ts checks that every such variable of every app's config schema is set here to a
 * value apart from its default (the development stack's).
 */
export function isolatedEnv(tag: string): Record<string, string> {
  return {
    MODEL_SUBJECT_PREFIX: `t${tag}.`,
    SEARCH_SUBJECT_PREFIX: `t${tag}.`,
    USAGE_STREAM: `USAGE_T${tag}`,
    USAGE_SUBJECT_ROOT: `usage_t${tag}.events`,
    LIMITS_REDIS_PREFIX: `t${tag}:lim:`,
    CONSOLE_REDIS_PREFIX: `t${tag}:console:`,
    BULLMQ_PREFIX: `t${tag}:bull`,
    IMAGE_STORE_REDIS_PREFIX: `t${tag}:images:`,
    SEARCH_CACHE_PREFIX: `t${tag}:search:`,
  };
}

/** The Redis keys of a stack's own prefixes (`t<tag>:`), deleted when it closes. */
async function deleteRedisKeys(match: string, redisUrl?: string): Promise<void> {
  const url = redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  // A cluster (limits-cluster.spec) is the test's own, gone with it.
  if (!url.startsWith('redis://')) return;
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    for await (const keys of redis.scanStream({ match, count: 500 }) as AsyncIterable<string[]>) {
      if (keys.length) await redis.del(...keys);
    }
  } catch {
    // A test that stopped Redis (outages): nothing to clean here.
  } finally {
    redis.disconnect();
  }
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  // Each stack has its own NATS subjects, usage stream and Redis prefixes (isolatedEnv); a test's env wins.
  const tag = randomBytes(4).toString('hex');
  const env: Record<string, string> = { ...isolatedEnv(tag), ...opts.env };
  // A test that names its own model subjects gets the search subject beside them (it starts its
  // search-service with that prefix), unless it names that one too.
  if (opts.env?.MODEL_SUBJECT_PREFIX && !opts.env.SEARCH_SUBJECT_PREFIX)
    env.SEARCH_SUBJECT_PREFIX = opts.env.MODEL_SUBJECT_PREFIX;
  const databaseUrl = `${opts.pgRoot ?? PG_ROOT}/infer_it_${randomBytes(5).toString('hex')}`;
  await ensureDatabase(databaseUrl);
  await migrateDeploy(databaseUrl);
  const prisma = createPrisma(databaseUrl);
  await new CatalogRepository(prisma).syncFromFile(opts.catalogFile ?? 'config/models.yaml');
  const members = new MembersRepository(prisma);
  const apiKeys = new ApiKeysRepository(prisma);
  const keys = {} as Record<TierName, string>;
  for (const tier of ['community', 'inference', 'premium'] as const) {
    const m = await members.create({ name: `it-${tier}`, tier });
    keys[tier] = (await apiKeys.mint(m.id, `it-${tier}`)).key;
  }
  // With MODEL_SUBJECT_PREFIX (tests only) the gateway and this chat-service talk on their own
  // subjects, out of reach of other chat-services on the same NATS.
  const chat = await startChatService({
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    subjectPrefix: env.MODEL_SUBJECT_PREFIX,
  });
  const appEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    ...env,
  };
  const extra: Array<{ stop(): Promise<void> }> = [];
  for (const start of opts.services ?? []) extra.push(await start(appEnv));
  const gatewayEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    ALLOW_INSECURE_HTTP: '1',
    LOG_LEVEL: 'silent',
    // Limits off unless a test turns them on (LIMITS_ENABLED: '1', see test/integration/limits*.spec.ts),
    // so that tests of other features are not refused by the spec's 60 rpm / 5 concurrent per key.
    LIMITS_ENABLED: '0',
    // Signs image URLs; required when a test turns ALLOW_INSECURE_HTTP off (production mode).
    IMAGE_URL_SECRET: 'integration-tests-image-url-secret-0123456789',
    ...env,
  };
  const gateway = await startGateway(gatewayEnv);
  const baseURL = `${gateway.url}/v1`;
  return {
    url: gateway.url,
    baseURL,
    databaseUrl,
    keys,
    gateway,
    gatewayEnv,
    usageRoot: env.USAGE_SUBJECT_ROOT ?? UsageStream.root,
    chat,
    prisma,
    client: (tier, opts = {}) => new OpenAI({ baseURL, apiKey: keys[tier], maxRetries: 0, ...opts }),
    close: async () => {
      await gateway.close();
      for (const svc of extra.reverse()) await svc.stop();
      await chat.stop();
      await prisma.$disconnect();
      await dropDatabase(databaseUrl);
      if (env.USAGE_STREAM !== UsageStream.name) await deleteStream(env.USAGE_STREAM, env.NATS_URL);
      await deleteRedisKeys(`t${tag}:*`, env.REDIS_URL);
    },
  };
}

/**
 * A ledger writer on `stack`'s database, consuming the stack's own usage stream (`extra` wins, e.g.
 * STATUS_SUBJECT_PREFIX so that its status reaches this stack's gateway). Stop it with stop().
 */
export function startStackLedger(stack: Stack, extra: Record<string, string> = {}): Promise<LedgerWriter> {
  return startLedgerWriter({ env: { ...process.env, ...stackLedgerEnv(stack), ...extra } });
}

/**
 * The ledger writer's environment on `stack`: its database, its usage stream and subjects, and its
 * status messages on the stack's subjects (the stack's gateway lists it; a development stack's does not).
 */
export function stackLedgerEnv(stack: Pick<Stack, 'databaseUrl' | 'gatewayEnv'>): Record<string, string> {
  const { USAGE_STREAM, USAGE_SUBJECT_ROOT, MODEL_SUBJECT_PREFIX } = stack.gatewayEnv;
  return {
    DATABASE_URL: stack.databaseUrl,
    LOG_LEVEL: 'silent',
    LEDGER_STREAM: String(USAGE_STREAM),
    LEDGER_SUBJECTS: `${USAGE_SUBJECT_ROOT}.>`,
    LEDGER_CONSUMER: 'ledger-writer',
    STATUS_SUBJECT_PREFIX: String(MODEL_SUBJECT_PREFIX ?? ''),
  };
}

export interface LiveStack {
  stack: Stack;
  ledger: LedgerWriter;
  /** The Redis prefix of its limits, console state (`console:`) and BullMQ queues (`bull`). */
  prefix: string;
  /** Stops the ledger writer and the stack, and deletes the Redis keys under `prefix`. */
  close(): Promise<void>;
}

/**
 * A stack as the console's live pages see it: limits on, its own usage stream, subjects and Redis
 * prefixes (named after `name` and a random tag), `version` as every app's SERVICE_VERSION, and a
 * ledger writer whose status messages reach this gateway. `env` adds to the gateway's environment.
 */
export async function startLiveStack(
  name: string,
  version: string,
  env: Record<string, string> = {},
): Promise<LiveStack> {
  const tag = randomBytes(4).toString('hex');
  const prefix = `test:${name}:${tag}:`;
  const subjectPrefix = `${name}${tag}.`;
  const stack = await startStack({
    env: {
      MODEL_SUBJECT_PREFIX: subjectPrefix,
      USAGE_STREAM: `USAGE_${name.toUpperCase()}${tag.toUpperCase()}`,
      USAGE_SUBJECT_ROOT: `usage_${name}${tag}.events`,
      LIMITS_ENABLED: '1',
      LIMITS_REDIS_PREFIX: prefix,
      CONSOLE_REDIS_PREFIX: `${prefix}console:`,
      BULLMQ_PREFIX: `${prefix}bull`,
      SERVICE_VERSION: version,
      ...env,
    },
  });
  const ledger = await startStackLedger(stack, {
    STATUS_SUBJECT_PREFIX: subjectPrefix,
    SERVICE_VERSION: version,
  });
  return {
    stack,
    ledger,
    prefix,
    close: async () => {
      await ledger.stop();
      await stack.close();
      const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    },
  };
}

/** Calls the SDK and returns the APIError it throws (fails the test if it does not throw). */
export async function apiError(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (e) {
    if (e instanceof OpenAI.APIError) return e;
    throw e;
  }
  throw new Error('expected the call to fail');
}
