import { RedisUrlSchema } from '@infer/rpc';
import { envBool, envInt, envList, NatsUrlSchema, parseConfig } from '@infer/runtime';
import { z } from 'zod';

export const SEARCH_ENGINES = ['local', 'searxng', 'brave'] as const;
export type SearchEngineName = (typeof SEARCH_ENGINES)[number];

const httpUrl = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL')
  .transform((u) => u.replace(/\/+$/, ''));

const list = envList();

/**
 * The search-service's environment, validated at start-up (a bad value stops the service with a
 * message naming it). The engine is chosen here, not in the model catalog: search has no model, and
 * engine credentials belong in the environment.
 */
export const SearchEnvSchema = z
  .object({
    NATS_URL: NatsUrlSchema,
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .describe('Level of the JSON logs (pino).'),
    DATABASE_URL: z
      .string()
      .default('postgresql://postgres@127.0.0.1:5432/infer')
      .describe('PostgreSQL connection URL (the local full-text index).'),
    REDIS_URL: RedisUrlSchema,

    SEARCH_ENGINE: z
      .enum(SEARCH_ENGINES)
      .default('local')
      .describe('Which engine answers: the local full-text index, a SearXNG instance, or Brave.'),
    SEARCH_TIMEOUT_MS: envInt(10_000, 100).describe(
      "Longest wait for the engine's answer (ms); past it the search is 503 search_unavailable.",
    ),

    SEARXNG_URL: httpUrl
      .optional()
      .describe(
        'SearXNG base URL, required with SEARCH_ENGINE=searxng (its JSON API must be enabled: `search.formats: [html, json]`).',
      ),
    SEARXNG_ENGINES: z
      .string()
      .optional()
      .describe("Comma-separated SearXNG engines (google,bing); default: the instance's own."),
    SEARXNG_LANGUAGE: z.string().optional().describe("SearXNG's `language` parameter."),

    BRAVE_API_KEY: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Brave Search API subscription token (X-Subscription-Token), required with SEARCH_ENGINE=brave.',
      ),
    BRAVE_BASE_URL: httpUrl
      .default('https://api.search.brave.com')
      .describe('Brave API base URL (tests point it at a local server).'),
    BRAVE_COUNTRY: z.string().optional().describe("Brave's `country` parameter."),
    BRAVE_SAFESEARCH: z
      .enum(['off', 'moderate', 'strict'])
      .optional()
      .describe("Brave's safesearch: off, moderate (Brave's default) or strict."),

    SEARCH_HYBRID: envBool(true).describe(
      'Local engine: order the full-text candidates by the hybrid of full-text rank and vector similarity ' +
        '(vectors from the embedding service, stored with the documents; engines/hybrid.ts).',
    ),
    SEARCH_EMBED_MODEL: z
      .string()
      .min(1)
      .default('embed-model')
      .describe('The embedding model (catalog id) of the hybrid ranking.'),
    SEARCH_EMBED_INTERVAL_MS: envInt(10_000, 100).describe(
      'How often newly ingested documents (those without a vector) are embedded (ms).',
    ),
    SEARCH_SEED_ON_START: envBool(true).describe(
      "Local engine: seed the index with the project's documentation at start when it is empty.",
    ),
    SEARCH_DOCS_DIR: z
      .string()
      .optional()
      .describe(
        'Where the project documentation lives (the repository root); default: the working directory.',
      ),

    SEARCH_CACHE_TTL_S: envInt(900, 0).describe(
      'Identical queries are answered from Redis for this long (seconds; the API promises about 15 minutes); 0: no cache.',
    ),
    SEARCH_CACHE_PREFIX: z
      .string()
      .min(1)
      .default('infer:search:cache')
      .describe('Redis key prefix of the cache (tests give each run its own).'),

    FETCH_TIMEOUT_MS: envInt(8_000, 100).describe('fetch_content: longest wait for one page (ms).'),
    FETCH_MAX_BYTES: envInt(3 * 1024 * 1024, 1024).describe('fetch_content: largest page read (bytes).'),
    FETCH_MAX_REDIRECTS: envInt(3, 0).describe('fetch_content: most redirects followed for one page.'),
    FETCH_TOTAL_TIMEOUT_MS: envInt(20_000, 100).describe(
      'fetch_content: the whole phase of one search (ms); pages not done by then get no content.',
    ),
    FETCH_CONCURRENCY: envInt(5, 1).describe('fetch_content: pages fetched at the same time for one search.'),
    FETCH_CONTENT_MAX_CHARS: envInt(20_000, 100).describe(
      'Longest `content` per result (characters); the text is cut at a paragraph or word boundary.',
    ),
    FETCH_ALLOW_HOSTS: list.describe(
      'host or host:port entries the SSRF-guarded fetch may reach although they are not public addresses ' +
        '(an intranet wiki behind a local index; tests serving pages from 127.0.0.1). Empty by default.',
    ),
  })
  .superRefine((e, ctx) => {
    if (e.SEARCH_ENGINE === 'searxng' && !e.SEARXNG_URL) {
      ctx.addIssue({ code: 'custom', path: ['SEARXNG_URL'], message: 'required when SEARCH_ENGINE=searxng' });
    }
    if (e.SEARCH_ENGINE === 'brave' && !e.BRAVE_API_KEY) {
      ctx.addIssue({ code: 'custom', path: ['BRAVE_API_KEY'], message: 'required when SEARCH_ENGINE=brave' });
    }
  });
export type SearchConfig = z.infer<typeof SearchEnvSchema>;

export function loadSearchConfig(env: NodeJS.ProcessEnv = process.env): SearchConfig {
  return parseConfig('search-service', SearchEnvSchema, env);
}
