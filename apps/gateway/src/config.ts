import { DEFAULT_QUEUE_PREFIX, UsageStream } from '@infer/contracts';
import {
  checkFileStoreEnv,
  checkImageStoreEnv,
  FileStoreEnvShape,
  ImageStoreEnvShape,
} from '@infer/image-store';
import {
  envBool,
  envInt,
  envList,
  NatsUrlSchema,
  parseConfig,
  queuePrefixFor,
  RedisUrlSchema,
} from '@infer/service-kit';
import { z } from 'zod';

/** An origin as browsers send it: scheme://host[:port], no path. */
const ORIGIN_RE = /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** The gateway's settings before the cross-field checks: the batch runner picks its shared ones from here. */
export const GatewayEnvFields = z.object({
  HOST: z.string().default('0.0.0.0'),
  PORT: envInt(8080),
  DATABASE_URL: z.string().default('postgresql://postgres@127.0.0.1:5432/infer'),
  REDIS_URL: RedisUrlSchema,
  NATS_URL: NatsUrlSchema,
  /** PEM files; when both are set the gateway speaks TLS itself. */
  TLS_CERT_FILE: z.string().optional(),
  TLS_KEY_FILE: z.string().optional(),
  /** Comma-separated IPs/CIDRs of proxies whose X-Forwarded-Proto/-For are believed. */
  TRUSTED_PROXIES: envList(),
  /**
   * Browser origins allowed to call the API cross-origin (CORS), comma-separated exact origins
   * (`https://app.example.com`), or `*` (the default: any origin; keys are bearer tokens, never
   * cookies, so no credentials are involved). Empty: no CORS headers at all. See http/cors.ts.
   */
  CORS_ORIGINS: envList('*').refine((list) => list.every((o) => o === '*' || ORIGIN_RE.test(o)), {
    message: "each entry must be '*' or an origin like https://app.example.com (scheme, host, optional port)",
  }),
  /** Development mode: plain HTTP accepted, but only from loopback clients. */
  ALLOW_INSECURE_HTTP: envBool(false),
  /** How long a key lookup (hit or miss) is cached: a revoked key stops working within this. */
  KEY_CACHE_TTL_MS: envInt(5_000),
  /** While PostgreSQL is down, keys verified within this long keep working (ms); unknown keys get 503. */
  KEY_CACHE_STALE_MS: envInt(600_000),
  /** Unknown-key lookups per client address per 10 s before 429 (protects PostgreSQL from floods). */
  INVALID_KEY_LIMIT: envInt(30, 1),
  CATALOG_REFRESH_MS: envInt(30_000, 1_000),
  /** Longest a model request may take end to end. */
  REQUEST_TIMEOUT_MS: envInt(600_000, 1_000),
  /** Longest silence between two frames of a stream (and time to first frame). */
  IDLE_TIMEOUT_MS: envInt(120_000, 100),
  BODY_LIMIT_BYTES: envInt(32 * 1024 * 1024, 1024),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Credential for /admin (not an API key). Admin routes are off when unset. */
  ADMIN_TOKEN: z.string().min(16).optional(),
  /** The operator console's build, served at /console/ (default: apps/console/dist of this checkout). */
  CONSOLE_DIR: z.string().optional(),
  /** Operator console sessions end after this long without a request (idle expiry). */
  CONSOLE_SESSION_IDLE_MS: envInt(30 * 60_000, 1_000),
  /** Failed sign-ins allowed per account, and per client IP, within CONSOLE_LOGIN_WINDOW_S. */
  CONSOLE_LOGIN_MAX_FAILURES_ACCOUNT: envInt(5, 1),
  CONSOLE_LOGIN_MAX_FAILURES_IP: envInt(30, 1),
  CONSOLE_LOGIN_WINDOW_S: envInt(900, 1),
  /** Prefix of the console's Redis keys (sign-in throttling, single sign-on attempts). */
  CONSOLE_REDIS_PREFIX: z.string().min(1).default('console:'),
  /**
   * Single sign-on for the console with OpenID Connect (optional; ADR 0010). On when the issuer is
   * set: its discovery document is read at the first sign-in. The client is registered at the
   * provider with CONSOLE_OIDC_REDIRECT_URL (`https://<gateway>/admin/oidc/callback`).
   */
  CONSOLE_OIDC_ISSUER: z.string().url().optional(),
  CONSOLE_OIDC_CLIENT_ID: z.string().min(1).optional(),
  /** From the Secret (k8s: optional key); empty counts as unset, so an empty key in the Secret is harmless. */
  CONSOLE_OIDC_CLIENT_SECRET: z
    .string()
    .optional()
    .transform((v) => v || undefined),
  CONSOLE_OIDC_REDIRECT_URL: z.string().url().optional(),
  /** Shown on the sign-in page: "Sign in with <name>". */
  CONSOLE_OIDC_PROVIDER_NAME: z.string().min(1).max(60).default('single sign-on'),
  CONSOLE_OIDC_SCOPES: z.string().default('openid email profile'),
  /** Email domains allowed to sign in this way (comma-separated; empty: any domain). */
  CONSOLE_OIDC_ALLOWED_DOMAINS: envList(),
  /**
   * Create an unknown (verified, allowed-domain) email as a `viewer` at its first sign-in.
   * Off: the operator must exist already (`operator create` without a password is SSO-only).
   */
  CONSOLE_OIDC_AUTO_PROVISION: envBool(false),
  /** Tests only: prepended to the search subject, to match a search-service started with the same subjectPrefix. */
  SEARCH_SUBJECT_PREFIX: z.string().default(''),
  /**
   * Tests only: prepended to the subject of every model route (ModelGateway), to match services
   * started with the same subjectPrefix, so that a test stack is not answered by other services
   * running on the same NATS (e.g. a development stack started with scripts/start.sh).
   */
  MODEL_SUBJECT_PREFIX: z.string().default(''),
  /** JetStream stream and subject root of usage events (tests use their own, see the harness). */
  USAGE_STREAM: z.string().min(1).default(UsageStream.name),
  /** The version this replica reports to the console (image tag, git sha); default package.json's. */
  SERVICE_VERSION: z.string().optional(),
  /** The ledger writer's durable consumer on USAGE_STREAM (the console shows its lag). */
  LEDGER_CONSUMER: z.string().min(1).default(UsageStream.consumer),
  USAGE_SUBJECT_ROOT: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
    .default(UsageStream.root),
  /**
   * Most usage events in one JetStream message (usage/usage-publisher.ts): the events of one turn of
   * the event loop for one model leave together as a JSON array. 1: one message per event, as before
   * (for ledger writers older than batching: upgrade the ledger writers first).
   */
  // At most 1,000: a message of 1,000 events (~350 KB) stays under NATS's 1 MB default max_payload.
  USAGE_BATCH_MAX: envInt(64, 1).pipe(z.number().max(1000)),
  /** Limits and quotas (apps/gateway/src/limits). Off only for benchmarks or when enforced elsewhere. */
  LIMITS_ENABLED: envBool(true),
  /** YAML or JSON file with limit overrides (LimitsFileSchema); the spec's values are the defaults. */
  LIMITS_FILE: z.string().optional(),
  /** Prefix of the limits' Redis keys. */
  LIMITS_REDIS_PREFIX: z
    .string()
    .min(1)
    .regex(/^[^{}]*$/, "must not contain { or } (each member's hash tag follows the prefix)")
    .default('lim:'),
  /** BullMQ key prefix of the services' job queues (GET /admin/queues reads their counts). */
  BULLMQ_PREFIX: z.string().min(1).default(DEFAULT_QUEUE_PREFIX),
  /**
   * Public origin of the gateway (e.g. https://api.example.com), for the image URLs it hands out;
   * default: the address it listens on (right for one machine, wrong behind a proxy or load balancer).
   */
  PUBLIC_BASE_URL: z.string().url().optional(),
  /**
   * Secret (>= 32 characters) that signs image URLs (HMAC-SHA256); every gateway replica needs the
   * same. Required unless ALLOW_INSECURE_HTTP (development) is on, where a random per-process
   * secret is used when it is unset.
   */
  IMAGE_URL_SECRET: z.string().min(32).optional(),
  /** Where generated images are kept (IMAGE_STORE=redis|fs|s3 ...): the same store as the image-service. */
  ...ImageStoreEnvShape,
  /** Where /v1/files keeps its bytes (FILE_STORE=fs|s3 ...): the same store as the batch runner. */
  ...FileStoreEnvShape,
  /** Retention of uploaded files and of batch output/error files, in days (docs/api-decisions.md). */
  FILE_RETENTION_DAYS: envInt(30, 1),
  /**
   * A batch's completion window (`24h` on the wire): a batch not done by then is `expired`. Shorter
   * values are for tests.
   */
  BATCH_COMPLETION_WINDOW_MS: envInt(24 * 3_600_000, 1_000),
});

export const GatewayEnvSchema = GatewayEnvFields.refine(
  (e) => e.ALLOW_INSECURE_HTTP || Boolean(e.IMAGE_URL_SECRET),
  {
    message: 'required (at least 32 characters) unless ALLOW_INSECURE_HTTP (development mode) is on',
    path: ['IMAGE_URL_SECRET'],
  },
)
  .superRefine(checkImageStoreEnv)
  .superRefine(checkFileStoreEnv)
  .refine((e) => Boolean(e.TLS_CERT_FILE) === Boolean(e.TLS_KEY_FILE), {
    message: 'TLS_CERT_FILE and TLS_KEY_FILE go together',
    path: ['TLS_CERT_FILE'],
  })
  .refine(
    (e) =>
      !e.CONSOLE_OIDC_ISSUER ||
      Boolean(e.CONSOLE_OIDC_CLIENT_ID && e.CONSOLE_OIDC_CLIENT_SECRET && e.CONSOLE_OIDC_REDIRECT_URL),
    {
      message:
        'CONSOLE_OIDC_ISSUER needs CONSOLE_OIDC_CLIENT_ID, CONSOLE_OIDC_CLIENT_SECRET and CONSOLE_OIDC_REDIRECT_URL',
      path: ['CONSOLE_OIDC_ISSUER'],
    },
  )
  .refine((e) => !e.CONSOLE_OIDC_AUTO_PROVISION || e.CONSOLE_OIDC_ALLOWED_DOMAINS.length > 0, {
    message:
      'CONSOLE_OIDC_AUTO_PROVISION needs CONSOLE_OIDC_ALLOWED_DOMAINS (else anyone at the provider gets in)',
    path: ['CONSOLE_OIDC_AUTO_PROVISION'],
  });
export type GatewayConfig = z.infer<typeof GatewayEnvSchema>;

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const config = parseConfig('gateway', GatewayEnvSchema, env);
  // On a Redis Cluster every BullMQ queue needs its keys in one hash slot: a {tag} in the prefix.
  return { ...config, BULLMQ_PREFIX: queuePrefixFor(config.REDIS_URL, config.BULLMQ_PREFIX) };
}

export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');
