import {
  DEFAULT_MEMBER_INVITE_TTL,
  DEFAULT_QUEUE_PREFIX,
  MoneySchema,
  parseDuration,
  UsageStream,
} from '@infer/contracts';
import {
  checkFileStoreEnv,
  checkImageStoreEnv,
  FileStoreEnvShape,
  ImageStoreEnvShape,
} from '@infer/image-store';
import { queuePrefixFor, RedisUrlSchema } from '@infer/rpc';
import { envBool, envInt, envList, NatsUrlSchema, parseConfig } from '@infer/runtime';
import { z } from 'zod';

/** An origin as browsers send it: scheme://host[:port], no path. */
const ORIGIN_RE = /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** The gateway's settings before the cross-field checks: the batch runner picks its shared ones from here. */
export const GatewayEnvFields = z.object({
  HOST: z.string().default('0.0.0.0').describe('Listening address (the development scripts set 127.0.0.1).'),
  PORT: envInt(8080).describe(
    'Listening port of the API, /admin, /console, /healthz, /readyz (and /metrics without METRICS_PORT).',
  ),
  METRICS_PORT: z
    .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).max(65535).optional())
    .describe(
      'When set, /metrics is served on this port only (plain HTTP, no key, for scrapers inside the cluster), ' +
        'not on PORT, which the public edge forwards to. Unset: /metrics on PORT (development).',
    ),
  DATABASE_URL: z
    .string()
    .default('postgresql://postgres@127.0.0.1:5432/infer')
    .describe('PostgreSQL connection URL (keys, catalog, members, stored responses, files and batches).'),
  REDIS_URL: RedisUrlSchema,
  NATS_URL: NatsUrlSchema,
  TLS_CERT_FILE: z
    .string()
    .optional()
    .describe('PEM certificate; with TLS_KEY_FILE the gateway speaks HTTPS itself (the two go together).'),
  TLS_KEY_FILE: z.string().optional().describe('PEM private key of TLS_CERT_FILE.'),
  TRUSTED_PROXIES: envList().describe(
    'Comma-separated IPs/CIDRs of TLS-terminating proxies whose X-Forwarded-Proto/-For are believed.',
  ),
  // See http/cors.ts.
  CORS_ORIGINS: envList('*')
    .refine((list) => list.every((o) => o === '*' || ORIGIN_RE.test(o)), {
      message:
        "each entry must be '*' or an origin like https://app.example.com (scheme, host, optional port)",
    })
    .describe(
      'Browser origins allowed to call the API cross-origin (CORS): comma-separated exact origins ' +
        '(https://app.example.com) or * (any origin; keys are bearer tokens, never cookies). Empty: no CORS ' +
        'headers at all. Preflights are answered before auth.',
    ),
  ALLOW_INSECURE_HTTP: envBool(false).describe(
    'Development mode: plain HTTP accepted, but only from loopback clients. Never set it in production.',
  ),
  RESPONSES_RETENTION_DAYS: envInt(30, 1).describe(
    'How long /v1/responses answers with store (the default) are kept for previous_response_id and GET /v1/responses/{id} (days); a job deletes them after.',
  ),
  KEY_CACHE_TTL_MS: envInt(5_000).describe(
    'How long a key lookup (hit or miss) is cached (ms): a revoked key stops working within this.',
  ),
  KEY_CACHE_STALE_MS: envInt(600_000).describe(
    'While PostgreSQL is down, keys verified within this long keep working (ms); unknown keys get 503.',
  ),
  INVALID_KEY_LIMIT: envInt(30, 1).describe(
    'Unknown-key lookups per client address per 10 s before 429 (protects PostgreSQL from floods).',
  ),
  CATALOG_REFRESH_MS: envInt(30_000, 1_000).describe(
    'How often the model catalog is re-read from PostgreSQL (ms); catalog changes take effect within this.',
  ),
  REQUEST_TIMEOUT_MS: envInt(600_000, 1_000).describe(
    'Longest a model request may take end to end (ms): the deadline sent to the service, which stops the work and answers 524.',
  ),
  IDLE_TIMEOUT_MS: envInt(120_000, 100).describe(
    'Longest silence between two frames of a stream, and the longest wait for the first frame (ms).',
  ),
  MESSAGES_PING_INTERVAL_MS: envInt(10_000, 100).describe(
    'A /v1/messages stream that has written nothing for this long gets a keep-alive `ping` event (ms), so proxies and clients do not drop a stream while the model thinks.',
  ),
  BODY_LIMIT_BYTES: envInt(32 * 1024 * 1024, 1024).describe(
    'Largest request body accepted (bytes); larger bodies get 413.',
  ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Level of the JSON logs (pino); logs never carry keys or bodies.'),
  ADMIN_TOKEN: z
    .string()
    .min(16)
    .optional()
    .describe(
      'Automation credential for the /admin routes (not an API key). When unset, /admin answers only console sessions.',
    ),
  CONSOLE_DIR: z
    .string()
    .optional()
    .describe(
      'The operator console build served at /console/ (default: apps/console/dist of this checkout).',
    ),
  CONSOLE_SESSION_IDLE_MS: envInt(30 * 60_000, 1_000).describe(
    'An operator console session ends after this long without a request (ms).',
  ),
  CONSOLE_LOGIN_MAX_FAILURES_ACCOUNT: envInt(5, 1).describe(
    'Failed console sign-ins allowed per account within CONSOLE_LOGIN_WINDOW_S before 429.',
  ),
  CONSOLE_LOGIN_MAX_FAILURES_IP: envInt(30, 1).describe(
    'Failed console sign-ins allowed per client IP within CONSOLE_LOGIN_WINDOW_S before 429.',
  ),
  CONSOLE_LOGIN_WINDOW_S: envInt(900, 1).describe('Window of the console sign-in failure counts (seconds).'),
  CONSOLE_REDIS_PREFIX: z
    .string()
    .min(1)
    .default('console:')
    .describe("Prefix of the console's Redis keys (sign-in throttling, single sign-on attempts)."),
  CONSOLE_OIDC_ISSUER: z
    .string()
    .url()
    .optional()
    .describe(
      "Console single sign-on with OpenID Connect (ADR 0010): the provider's issuer URL; on when set (its " +
        'discovery document is read at the first sign-in). Needs CONSOLE_OIDC_CLIENT_ID, ' +
        'CONSOLE_OIDC_CLIENT_SECRET and CONSOLE_OIDC_REDIRECT_URL.',
    ),
  CONSOLE_OIDC_CLIENT_ID: z
    .string()
    .min(1)
    .optional()
    .describe('The client id registered at the OpenID Connect provider.'),
  CONSOLE_OIDC_CLIENT_SECRET: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .describe(
      'The client secret (from a Secret; empty counts as unset, so an empty optional key in the Secret is harmless).',
    ),
  CONSOLE_OIDC_REDIRECT_URL: z
    .string()
    .url()
    .optional()
    .describe('The redirect URL registered at the provider: https://<gateway>/admin/oidc/callback.'),
  CONSOLE_OIDC_PROVIDER_NAME: z
    .string()
    .min(1)
    .max(60)
    .default('single sign-on')
    .describe('Shown on the sign-in page\'s button: "Sign in with <name>".'),
  CONSOLE_OIDC_SCOPES: z
    .string()
    .default('openid email profile')
    .describe('Scopes asked of the provider (space-separated).'),
  CONSOLE_OIDC_ALLOWED_DOMAINS: envList().describe(
    'Email domains allowed to sign in with single sign-on (comma-separated; empty: any domain).',
  ),
  CONSOLE_OIDC_AUTO_PROVISION: envBool(false).describe(
    'On: an unknown (verified, allowed-domain) email becomes a viewer at its first sign-in; needs ' +
      'CONSOLE_OIDC_ALLOWED_DOMAINS. Off: the operator must exist (`operator create` without a password is SSO-only).',
  ),
  MEMBER_INVITE_TTL: z
    .string()
    .default(DEFAULT_MEMBER_INVITE_TTL)
    .refine((v) => (parseDuration(v) ?? 0) > 0, 'must be a duration such as 72h or 7d')
    .describe(
      "How long a member's invitation link works (a duration: 72h, 7d); the admin CLI's `member invite` " +
        'reads the same variable. A password reset is another invitation.',
    ),
  MEMBER_MAX_KEYS: envInt(10, 1).describe(
    'Live (neither revoked nor expired) API keys a member may have at once on their account page.',
  ),
  MEMBER_SESSION_IDLE_MS: envInt(60 * 60_000, 1_000).describe(
    "A member's account-page session ends after this long without a request (ms).",
  ),
  SEARCH_SUBJECT_PREFIX: z
    .string()
    .default('')
    .describe(
      'Tests only: prepended to the search subject, to match a search-service started with the same prefix.',
    ),
  MODEL_SUBJECT_PREFIX: z
    .string()
    .default('')
    .describe(
      'Tests only: prepended to the subject of every model route, to match services started with the same ' +
        'prefix, so that a test stack is not answered by other services on the same NATS.',
    ),
  USAGE_STREAM: z
    .string()
    .min(1)
    .default(UsageStream.name)
    .describe('JetStream stream of usage events (tests use their own).'),
  SERVICE_VERSION: z
    .string()
    .optional()
    .describe(
      "The version this replica reports on the console's overview (image tag, git sha); default package.json's.",
    ),
  ALERTMANAGER_URL: z
    .preprocess((v) => (v === '' ? undefined : v), z.string().url().optional())
    .describe(
      "An Alertmanager's base URL (e.g. http://alertmanager:9093): the console's overview lists its active " +
        'alerts (GET /api/v2/alerts). Unset: the console evaluates the shipped PrometheusRule itself from ' +
        'what the gateways see (the rules it can; ADR 0111).',
    ),
  CONSOLE_ALERTS_FOR_S: z
    .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).optional())
    .describe(
      "Caps every alert rule's `for` (seconds) in the console's own evaluation, for a lab or a test that " +
        "cannot wait 10 minutes; unset: the rule file's `for`.",
    ),
  TRACE_URL_TEMPLATE: z
    .preprocess(
      (v) => (v === '' ? undefined : v),
      z
        .string()
        .url()
        .refine((u) => u.includes('{trace_id}'), 'must contain {trace_id}')
        .optional(),
    )
    .describe(
      'Link from a request in the console to its trace in your trace viewer: a URL with {trace_id}, e.g. ' +
        'https://jaeger.example.com/trace/{trace_id} or a Grafana Explore URL. Unset: the trace id is shown ' +
        'without a link.',
    ),
  LEDGER_CONSUMER: z
    .string()
    .min(1)
    .default(UsageStream.consumer)
    .describe("The ledger writer's durable consumer on USAGE_STREAM, whose lag the console shows."),
  USAGE_SUBJECT_ROOT: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
    .default(UsageStream.root)
    .describe('Subject root of the usage events (dot-separated tokens; tests use their own).'),
  // At most 1,000: a message of 1,000 events (~350 KB) stays under NATS's 1 MB default max_payload.
  USAGE_BATCH_MAX: envInt(64, 1)
    .pipe(z.number().max(1000))
    .describe(
      'Most usage events in one JetStream message (usage/usage-publisher.ts): the events of one turn of the ' +
        'event loop for one model leave together. 1: one message per event, for ledger writers older than ' +
        'batching (upgrade the ledger writers first).',
    ),
  REQUEST_LOG_BODY_MAX_BYTES: envInt(65_536, 1_024)
    .pipe(z.number().max(131_072))
    .describe(
      'Body logging (docs/adr/0110-request-log.md): most bytes kept of each request and response body of a ' +
        'member or model whose bodies are logged; a longer body is cut and ends with a truncation marker. At ' +
        "most 128 KiB: the bodies travel on the usage event, under NATS's 1 MB max_payload.",
    ),
  LIMITS_ENABLED: envBool(true).describe(
    'Limits and quotas (apps/gateway/src/limits). Off admits everything and counts nothing: only for ' +
      'benchmarks or when enforced elsewhere.',
  ),
  LIMITS_FILE: z
    .string()
    .optional()
    .describe(
      'YAML or JSON file of limit overrides (LimitsFileSchema), validated at start-up; what it does not ' +
        'say keeps the API contract\'s values (docs/api-contract.md, "Limits").',
    ),
  LIMITS_REDIS_PREFIX: z
    .string()
    .min(1)
    .regex(/^[^{}]*$/, "must not contain { or } (each member's hash tag follows the prefix)")
    .default('lim:')
    .describe("Prefix of the limits' Redis keys (no { or }: each member's hash tag follows it)."),
  ALERT_THRESHOLDS: z
    .string()
    .default('80,90,100')
    .transform((s, ctx) => {
      const out = s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
        .map(Number);
      if (out.some((n) => !Number.isInteger(n) || n < 1 || n > 100)) {
        ctx.addIssue({ code: 'custom', message: 'comma-separated whole percentages from 1 to 100' });
        return z.NEVER;
      }
      return [...new Set(out)].sort((a, b) => a - b);
    })
    .describe(
      'Percentages of a monthly budget or token allowance at which an alert is raised, once per threshold, ' +
        'counter and period (delivered by the ledger writer to ALERT_WEBHOOK_URL; docs/adr/0101-money.md). ' +
        'Empty: no alerts.',
    ),
  WEB_SEARCH_PRICE: MoneySchema.default('0')
    .transform((v) => String(v))
    .describe(
      'Price of one web search in dollars, a decimal string such as "0.005" (the built-in web-search ' +
        "entry's pricing.per_search): each POST /v1/search, MCP web_search and hosted web_search tool " +
        'search that succeeds costs this much in the ledger and counts toward budgets. 0: free.',
    ),
  BULLMQ_PREFIX: z
    .string()
    .min(1)
    .default(DEFAULT_QUEUE_PREFIX)
    .describe("BullMQ key prefix of the services' job queues (GET /admin/queues reads their counts)."),
  PUBLIC_BASE_URL: z
    .string()
    .url()
    .optional()
    .describe(
      'Public origin of the gateway (https://api.example.com) for the image URLs it hands out; default: the ' +
        'address it listens on (right for one machine, wrong behind a proxy or load balancer).',
    ),
  IMAGE_URL_SECRET: z
    .string()
    .min(32)
    .optional()
    .describe(
      'Secret (>= 32 characters) that signs image URLs (HMAC-SHA256), the same on every replica. Required ' +
        'unless ALLOW_INSECURE_HTTP is on, where a random per-process secret is used when it is unset.',
    ),
  // Where generated images are kept (IMAGE_STORE=redis|fs|s3 ...): the same store as the image-service.
  ...ImageStoreEnvShape,
  // Where /v1/files keeps its bytes (FILE_STORE=fs|s3 ...): the same store as the batch runner.
  ...FileStoreEnvShape,
  FILE_RETENTION_DAYS: envInt(30, 1).describe(
    'Retention of uploaded files and of batch output/error files, in days (docs/api-decisions.md).',
  ),
  BATCH_COMPLETION_WINDOW_MS: envInt(24 * 3_600_000, 1_000).describe(
    "A batch's completion window (`24h` on the wire, ms): a batch not done by then is expired. Shorter values are for tests.",
  ),
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
