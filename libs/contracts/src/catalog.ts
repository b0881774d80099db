import { z } from 'zod';
import { PricingSchema } from './pricing.js';

/** Membership tiers, lowest first. */
export const TIERS = ['community', 'inference', 'premium'] as const;
export const TierSchema = z.enum(TIERS);
export type Tier = z.infer<typeof TierSchema>;

/**
 * `search` is the web search capability: it has no model of its own and no entry in the catalog file;
 * the gateway sends a fixed `web-search` entry (kind `search`) in the envelope to the search-service,
 * whose environment picks the engine (apps/search-service/README.md).
 */
export const ModelKindSchema = z.enum(['chat', 'embedding', 'rerank', 'tts', 'stt', 'image', 'search']);
export type ModelKind = z.infer<typeof ModelKindSchema>;

/**
 * How a chat model reasons:
 * - none: no reasoning; a reasoning switch sent to it is a 400
 * - effort: top-level `reasoning_effort` low/medium/high (chat-A)
 * - always: always reasons, ignores both switches (chat-B)
 * - default_on / default_off: `chat_template_kwargs.enable_thinking` with that default (chat-E / chat-F);
 *   chat-C and chat-D reason by default with no switch
 */
export const ReasoningModeSchema = z.enum([
  'none',
  'effort',
  'always',
  'default_on',
  'default_off',
  'fixed_on',
]);
export type ReasoningMode = z.infer<typeof ReasoningModeSchema>;

/** Simulator engine: a named test double with deterministic text and modelled latency. */
export const SimulatorEngineSchema = z.object({
  type: z.literal('simulator'),
  /** Time to first token, milliseconds. */
  ttft_ms: z.number().min(0).default(0),
  /** Inter-token latency, milliseconds. */
  itl_ms: z.number().min(0).default(0),
  /** Tokens produced when the request sets no max_tokens. */
  default_output_tokens: z.number().int().min(1).default(16),
  /** Reasoning tokens produced before the answer when the model reasons. */
  reasoning_tokens: z.number().int().min(0).default(8),
});

/** Request classes of the engine pools' wait queue and of vLLM's `priority`, first served first. */
export const PRIORITY_CLASSES = ['premium', 'inference', 'community', 'batch'] as const;
export const PriorityClassSchema = z.enum(PRIORITY_CLASSES);
export type PriorityClass = z.infer<typeof PriorityClassSchema>;

/**
 * Where an HTTP engine's endpoints are and how requests are spread over them (libs/engine-pool). A
 * model names its server(s) with exactly one of `base_url` (a pool of one), `endpoints` (a static list)
 * or `discovery` (the A/AAAA records of a headless Service, re-read every `refresh_s`).
 */
export const EnginePoolFields = {
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  endpoints: z
    .array(
      z.object({
        url: z.url({ protocol: /^https?$/ }),
        /** Share of the traffic relative to the other endpoints. */
        weight: z.number().int().min(1).max(100).default(1),
      }),
    )
    .min(1)
    .optional(),
  discovery: z
    .object({
      /** A DNS name whose A/AAAA records are the endpoints (a Kubernetes headless Service). */
      dns: z.string().min(1),
      port: z.number().int().min(1).max(65_535),
      /** Path every endpoint's URL ends with, e.g. `/v1`. */
      path: z.string().default(''),
      scheme: z.enum(['http', 'https']).default('http'),
      refresh_s: z.number().min(1).max(3600).default(10),
    })
    .optional(),
  /** round_robin (weighted), least_loaded (power of two choices), prefix_affinity (ADR 0060). */
  routing: z.enum(['round_robin', 'least_loaded', 'prefix_affinity']).default('prefix_affinity'),
  /** Requests one endpoint takes at once; beyond it the endpoint is saturated. */
  max_inflight_per_endpoint: z.number().int().min(1).max(100_000).default(64),
  /** Other endpoints tried when one fails before the first byte of the answer. */
  retries: z.number().int().min(0).max(10).default(2),
  /** Longest wait in the pool's queue when every endpoint is saturated; then 503 `overloaded`. */
  queue_timeout_ms: z.number().int().min(0).max(600_000).default(10_000),
  /** Chat: a stream broken mid-way continues on another endpoint from the text so far. */
  resume: z.boolean().default(false),
  /** Sends the caller's class as vLLM's request `priority` (needs `--scheduling-policy priority`). */
  tier_priority: z.boolean().default(false),
  /** Path of the active health probe on each endpoint's origin; empty turns probes off. */
  health_path: z.string().default('/health'),
  /** How often each endpoint is probed (ms); 0 turns probes off. */
  probe_interval_ms: z.number().int().min(0).max(600_000).default(5_000),
  /**
   * Path of the engine's Prometheus metrics on each endpoint's origin (vLLM serves them on its API
   * port, SGLang with --enable-metrics; the names read: docs/engine-pools.md), read at every probe
   * interval for the prefix-cache hit rate, waiting and running requests and KV cache use shown on the
   * console's Models page. Unset: '/metrics' for chat `openai` upstreams,
   * not read for other engines; '' turns it off.
   */
  metrics_path: z
    .string()
    .regex(/^(\/.*)?$/, "a path starting with '/', or '' for none")
    .optional(),
};

/** The pool fields alone (what libs/engine-pool reads of an engine's settings). */
export const EnginePoolSchema = z.object(EnginePoolFields);
export type EnginePoolSettings = z.output<typeof EnginePoolSchema>;

/** Exactly one of base_url, endpoints or discovery (a zod check for schemas built on EnginePoolFields). */
export function checkPoolSource(
  s: { base_url?: unknown; endpoints?: unknown; discovery?: unknown },
  ctx: { addIssue(issue: { code: 'custom'; message: string; path: string[]; input: unknown }): void },
): void {
  const given = [s.base_url, s.endpoints, s.discovery].filter((x) => x !== undefined).length;
  if (given !== 1) {
    ctx.addIssue({
      code: 'custom',
      message:
        given === 0
          ? 'needs one of base_url, endpoints or discovery'
          : 'give only one of base_url, endpoints or discovery',
      path: ['base_url'],
      input: s,
    });
  }
}

/**
 * Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, TGI, Ollama, TEI, LocalAI ...). Loose:
 * a service may read settings of its own here (e.g. `voices` of a speech upstream), which it validates.
 */
export const OpenAIUpstreamEngineSchema = z
  .looseObject({
    type: z.literal('openai'),
    ...EnginePoolFields,
    /** Model name on the upstream; defaults to the catalog id. */
    model: z.string().optional(),
    /** Name of an environment variable that holds the upstream's key (never the key itself). */
    api_key_env: z.string().optional(),
    /** Longest wait for the upstream's response headers, and then between two streamed chunks. */
    timeout_ms: z.number().int().min(1).default(600_000),
    /**
     * How a reasoning trace that the upstream leaves inline in `content` is split out (when the
     * upstream sends `reasoning_content` itself, that wins): `think_tags` = a `<think>...</think>` block
     * at the start of the answer; `think_tags_open` = the chat template opens `<think>` itself, so the
     * answer starts inside the trace (DeepSeek-R1 style) when the request reasons; `none` = leave it.
     */
    reasoning_parser: z.enum(['think_tags', 'think_tags_open', 'none']).default('think_tags'),
    /**
     * How tool calls that the upstream leaves inline in `content` are parsed (when it sends
     * `tool_calls` itself, those win): `hermes` = `<tool_call>{"name", "arguments"}</tool_call>`
     * (Qwen, Hermes ...), `mistral` = `[TOOL_CALLS][{...}]`, `none` = leave the text alone.
     */
    tool_call_parser: z.enum(['hermes', 'mistral', 'none']).default('hermes'),
  })
  .superRefine(checkPoolSource);

/** Embedded llama.cpp via node-llama-cpp on CPU. */
export const LlamaCppEngineSchema = z.object({
  type: z.literal('llama-cpp'),
  gguf: z.string(),
  /** CPU threads; default min(2, cores), never more than the cores. */
  threads: z.number().int().min(1).optional(),
  /** Tokens per sequence; default min(catalog context_window, the model's training context, 8192). */
  context_size: z.number().int().min(16).optional(),
  /** Generations run at once (context sequences); more requests wait for a free one. */
  parallel: z.number().int().min(1).max(64).default(1),
  /**
   * Reasoning tokens before the engine closes the `<think>` block itself (budget forcing);
   * `reasoning_effort` scales it: low x0.25, medium x1, high x4.
   */
  reasoning_budget: z.number().int().min(1).default(1024),
  /** Extra attempts when grammar-constrained output fails its schema (values a grammar cannot bound). */
  structured_retries: z.number().int().min(0).max(10).default(2),
  /** Jinja chat template to use instead of the one in the GGUF (`tokenizer.chat_template`). */
  chat_template: z.string().optional(),
  /** How the model writes tool calls: as the Hermes/Qwen `<tool_call>` tags or Mistral `[TOOL_CALLS]`. */
  tool_call_format: z.enum(['hermes', 'mistral']).default('hermes'),
});

/**
 * Engine settings of a catalog entry. Engine types not listed here (added by later services) pass
 * through as `{type, ...}` and are validated by the service that owns them.
 */
export const EngineConfigSchema = z.union([
  SimulatorEngineSchema,
  OpenAIUpstreamEngineSchema,
  LlamaCppEngineSchema,
  z.looseObject({ type: z.string() }),
]);
export type EngineConfig = z.infer<typeof EngineConfigSchema>;

export const AllowanceSchema = z.object({
  tokens: z.number().int().positive(),
  period: z.enum(['month', 'billing_period']),
});

export const CatalogEntrySchema = z.object({
  id: z.string().min(1),
  kind: ModelKindSchema,
  owned_by: z.string().default('infer'),
  /** Unix seconds; shown as Model.created. */
  created: z.number().int().default(1_767_225_600),
  /** Position in GET /models: lower is more capable and listed first. */
  rank: z.number().int(),
  description: z.string().default(''),
  /**
   * Other names a request may use for this model (e.g. the model names Anthropic's clients send by
   * default: `claude-opus-5-5`, `claude-haiku-5-5`). A request by alias is served, limited and billed
   * as this model; lists show the id only. Unique across the catalog (ids and aliases).
   */
  aliases: z.array(z.string().min(1).max(256)).max(32).default([]),
  tiers: z.array(TierSchema).min(1),
  context_window: z.number().int().positive().optional(),
  allowance: AllowanceSchema.nullable().default(null),
  capabilities: z
    .object({
      streaming: z.boolean().default(false),
      tools: z.boolean().default(false),
      vision: z.boolean().default(false),
      audio_input: z.boolean().default(false),
      response_format: z.boolean().default(false),
      completions: z.boolean().default(false),
      responses: z.boolean().default(false),
      reasoning: ReasoningModeSchema.default('none'),
    })
    .prefault({}),
  /** Embedding vector size. */
  dimensions: z.number().int().positive().optional(),
  /** Default `max_output_tokens` on /responses. */
  default_max_output_tokens: z.number().int().positive().optional(),
  /** Price of a batch line's tokens relative to interactive ones (usage reports apply it). */
  batch_price_factor: z.number().min(0).max(1).default(0.5),
  /**
   * Prices in dollars (per million input / output tokens, per image, per search, per audio minute):
   * the gateway prices every request with them when it ends, and the ledger keeps that cost, so a
   * later price change never rewrites history (docs/adr/0101-money.md). Absent: free.
   */
  pricing: PricingSchema.default({}),
  /**
   * Models tried, in order, when no endpoint of this one can take a request (all down, or saturated
   * past the queue); the gateway keeps those the caller's tier may use (ServiceRequest.fallbacks).
   */
  fallbacks: z.array(z.string().min(1)).max(8).default([]),
  engine: EngineConfigSchema,
  /**
   * Log the request and response bodies of this model's calls (docs/adr/0110-request-log.md). Set by
   * an operator (PATCH /admin/models/{id}), stored on the model's row; the catalog file does not set
   * it (the sync leaves the row's switch alone).
   */
  log_bodies: z.boolean().optional(),
});
export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;
export type CatalogEntryInput = z.input<typeof CatalogEntrySchema>;

export const CatalogFileSchema = z.object({ models: z.array(CatalogEntrySchema).min(1) });
export type CatalogFile = z.infer<typeof CatalogFileSchema>;

export function tierReaches(tier: Tier, entry: Pick<CatalogEntry, 'tiers'>): boolean {
  return entry.tiers.includes(tier);
}

/**
 * The endpoints a model serves (the `endpoints` extension field of GET /v1/models): chat models
 * /v1/chat/completions and /v1/messages, plus /v1/completions and /v1/responses where their capabilities list them;
 * each other kind its own endpoints.
 */
export function modelEndpoints(entry: Pick<CatalogEntry, 'kind' | 'capabilities'>): string[] {
  switch (entry.kind) {
    case 'chat':
      return [
        '/v1/chat/completions',
        '/v1/messages',
        ...(entry.capabilities.completions ? ['/v1/completions'] : []),
        ...(entry.capabilities.responses ? ['/v1/responses'] : []),
      ];
    case 'embedding':
      return ['/v1/embeddings'];
    case 'rerank':
      return ['/v1/rerank', '/v2/rerank'];
    case 'tts':
      return ['/v1/audio/speech'];
    case 'stt':
      return ['/v1/audio/transcriptions'];
    case 'image':
      return ['/v1/images/generations', '/v1/images/edits'];
    case 'search':
      return ['/v1/search', '/mcp'];
  }
}
