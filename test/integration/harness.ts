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

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  // Each stack talks on its own NATS subjects and publishes usage to its own stream, so test runs
  // (and a development stack) on the same NATS never answer each other or mix their usage events.
  const tag = randomBytes(4).toString('hex');
  const env: Record<string, string> = {
    MODEL_SUBJECT_PREFIX: `t${tag}.`,
    USAGE_STREAM: `USAGE_T${tag}`,
    USAGE_SUBJECT_ROOT: `usage_t${tag}.events`,
    ...opts.env,
  };
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
    },
  };
}

/**
 * A ledger writer on `stack`'s database, consuming the stack's own usage stream (`extra` wins, e.g.
 * STATUS_SUBJECT_PREFIX so that its status reaches this stack's gateway). Stop it with stop().
 */
export function startStackLedger(stack: Stack, extra: Record<string, string> = {}): Promise<LedgerWriter> {
  const { USAGE_STREAM, USAGE_SUBJECT_ROOT } = stack.gatewayEnv;
  return startLedgerWriter({
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      LOG_LEVEL: 'silent',
      LEDGER_STREAM: USAGE_STREAM,
      LEDGER_SUBJECTS: `${USAGE_SUBJECT_ROOT}.>`,
      LEDGER_CONSUMER: 'ledger-writer',
      ...extra,
    },
  });
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
