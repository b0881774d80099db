import { createRedisClient, RedisUrlSchema } from '@infer/rpc';
import { envBool, envInt } from '@infer/runtime';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { FsImageStore } from './fs-store.js';
import { RedisImageStore } from './redis-store.js';
import { S3ImageStore } from './s3-store.js';
import type { ImageStore } from './store.js';

/**
 * Environment of the image store, shared by every process that reads or writes images (gateway,
 * image-service api and workers): they must all point at the same store.
 */
export const ImageStoreEnvShape = {
  IMAGE_STORE: z
    .enum(['redis', 'fs', 's3'])
    .default('redis')
    .describe(
      'Where generated images are kept: redis, fs or s3; the same store for the gateway and the image-service.',
    ),
  IMAGE_STORE_REDIS_PREFIX: z
    .string()
    .min(1)
    .default('infer:image:')
    .describe('Redis key prefix (redis store).'),
  IMAGE_STORE_DIR: z
    .string()
    .min(1)
    .default('var/images')
    .describe(
      'Directory of the fs store, shared by every process that reads or writes images (one disk or volume).',
    ),
  IMAGE_S3_ENDPOINT: z
    .string()
    .url()
    .optional()
    .describe('S3 store: endpoint URL (required with IMAGE_STORE=s3).'),
  IMAGE_S3_BUCKET: z.string().min(1).optional().describe('S3 store: bucket (required with IMAGE_STORE=s3).'),
  IMAGE_S3_REGION: z
    .string()
    .min(1)
    .default('us-east-1')
    .describe('S3 store: region of the request signatures.'),
  IMAGE_S3_ACCESS_KEY_ID: z
    .string()
    .min(1)
    .optional()
    .describe('S3 store: access key id (required with IMAGE_STORE=s3).'),
  IMAGE_S3_SECRET_ACCESS_KEY: z
    .string()
    .min(1)
    .optional()
    .describe('S3 store: secret access key (required with IMAGE_STORE=s3; from a Secret).'),
  IMAGE_S3_SESSION_TOKEN: z
    .string()
    .min(1)
    .optional()
    .describe('S3 store: session token of temporary credentials.'),
  IMAGE_S3_PREFIX: z.string().default('images/').describe('S3 store: key prefix of the objects.'),
  IMAGE_S3_FORCE_PATH_STYLE: envBool(true).describe(
    'S3 store: path-style URLs (endpoint/bucket/key), as MinIO and most S3-compatible servers need.',
  ),
  IMAGE_S3_TIMEOUT_MS: envInt(30_000, 100).describe('S3 store: longest wait for one S3 request (ms).'),
};

export type ImageStoreEnv = z.output<z.ZodObject<typeof ImageStoreEnvShape>>;

/** Cross-field rules, for `.superRefine` of an env schema that spreads ImageStoreEnvShape. */
export function checkImageStoreEnv(env: Partial<ImageStoreEnv>, ctx: z.RefinementCtx): void {
  if (env.IMAGE_STORE !== 's3') return;
  for (const name of [
    'IMAGE_S3_ENDPOINT',
    'IMAGE_S3_BUCKET',
    'IMAGE_S3_ACCESS_KEY_ID',
    'IMAGE_S3_SECRET_ACCESS_KEY',
  ] as const) {
    if (!env[name]) ctx.addIssue({ code: 'custom', message: 'required when IMAGE_STORE=s3', path: [name] });
  }
}

export const ImageStoreEnvSchema = z
  .object({ REDIS_URL: RedisUrlSchema, ...ImageStoreEnvShape })
  .superRefine(checkImageStoreEnv);

/**
 * Builds the configured store. The redis store uses `opts.redis` when given (the caller keeps owning
 * it) or opens its own connection to `redisUrl` (closed by the store's close()).
 */
export function createImageStore(
  env: ImageStoreEnv,
  opts: { redis?: Redis; redisUrl?: string; now?: () => number } = {},
): ImageStore {
  switch (env.IMAGE_STORE) {
    case 'fs':
      return new FsImageStore(env.IMAGE_STORE_DIR, { now: opts.now });
    case 's3':
      return new S3ImageStore({
        endpoint: env.IMAGE_S3_ENDPOINT!,
        bucket: env.IMAGE_S3_BUCKET!,
        region: env.IMAGE_S3_REGION,
        accessKeyId: env.IMAGE_S3_ACCESS_KEY_ID!,
        secretAccessKey: env.IMAGE_S3_SECRET_ACCESS_KEY!,
        sessionToken: env.IMAGE_S3_SESSION_TOKEN,
        prefix: env.IMAGE_S3_PREFIX,
        forcePathStyle: env.IMAGE_S3_FORCE_PATH_STYLE,
        timeoutMs: env.IMAGE_S3_TIMEOUT_MS,
        now: opts.now,
      });
    default: {
      if (opts.redis) return new RedisImageStore(opts.redis, env.IMAGE_STORE_REDIS_PREFIX);
      const redis = createRedisClient(opts.redisUrl ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
      return new RedisImageStore(redis, env.IMAGE_STORE_REDIS_PREFIX, true);
    }
  }
}
