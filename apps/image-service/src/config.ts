import { hostname } from 'node:os';
import { DEFAULT_QUEUE_PREFIX } from '@infer/contracts';
import { checkImageStoreEnv, ImageStoreEnvShape } from '@infer/image-store';
import { queuePrefixFor, RedisUrlSchema } from '@infer/rpc';
import { envInt, NatsUrlSchema, parseConfig } from '@infer/runtime';
import { z } from 'zod';

export const IMAGE_ROLES = ['api', 'worker', 'all'] as const;
export type ImageRole = (typeof IMAGE_ROLES)[number];

/**
 * The image-service's environment, validated once at start-up. Every variable has a default that
 * works on one machine; the image store settings (IMAGE_STORE ...) must match the gateway's.
 */
export const ImageEnvSchema = z
  .object({
    NATS_URL: NatsUrlSchema,
    REDIS_URL: RedisUrlSchema,
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .describe('Level of the JSON logs (pino).'),
    IMAGE_ROLE: z
      .enum(IMAGE_ROLES)
      .default('all')
      .describe(
        'api: NATS-facing (requests -> jobs, waits for results); worker: runs the engines; all: both.',
      ),
    BULLMQ_PREFIX: z
      .string()
      .min(1)
      .default(DEFAULT_QUEUE_PREFIX)
      .describe("BullMQ key prefix, shared with the gateway's admin API (GET /admin/queues)."),
    IMAGE_WORKER_CONCURRENCY: envInt(1, 1).describe(
      'Jobs one worker process runs at once (1 per GPU is the usual choice).',
    ),
    IMAGE_WORKER_NAME: z
      .string()
      .min(1)
      .default(`${hostname()}:${process.pid}`)
      .meta({ description: 'Name stored on the jobs a worker processes.', docDefault: 'host:pid' }),
    IMAGE_LOCK_DURATION_MS: envInt(60_000, 1_000).describe(
      "A worker holds a job's lock for this long and renews it at half (ms); a worker that dies loses it " +
        'and the job goes back to the queue (once) for another worker.',
    ),
    IMAGE_URL_TTL_SECONDS: envInt(3_600, 60).describe(
      'How long generated images (and so their URLs) live, seconds: the API promises about 60 minutes.',
    ),
    IMAGE_B64_TTL_SECONDS: envInt(300, 30).describe(
      'How long b64_json results wait in the store for the gateway to read them (then deleted), seconds.',
    ),
    IMAGE_CONTENT_POLICY_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Operator content policy for prompts (YAML or JSON: blocked_terms, blocked_patterns, message; ' +
          'content-policy.ts); unset: no filter.',
      ),
    ...ImageStoreEnvShape,
  })
  .superRefine(checkImageStoreEnv);
export type ImageConfig = z.infer<typeof ImageEnvSchema>;

export function loadImageConfig(env: NodeJS.ProcessEnv = process.env): ImageConfig {
  const config = parseConfig('image-service', ImageEnvSchema, env);
  // On a Redis Cluster every BullMQ queue needs its keys in one hash slot: a {tag} in the prefix.
  return { ...config, BULLMQ_PREFIX: queuePrefixFor(config.REDIS_URL, config.BULLMQ_PREFIX) };
}
