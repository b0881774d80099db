import { z } from 'zod';

/** Membership tiers, lowest first. */
export const TIERS = ['community', 'inference', 'premium'] as const;
export const TierSchema = z.enum(TIERS);
export type Tier = z.infer<typeof TierSchema>;

export const ModelKindSchema = z.enum(['chat', 'embedding', 'rerank', 'tts', 'stt', 'image']);
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

/** Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, TGI, Ollama, TEI, LocalAI ...). */
export const OpenAIUpstreamEngineSchema = z.object({
  type: z.literal('openai'),
  base_url: z.string().url(),
  /** Model name on the upstream; defaults to the catalog id. */
  model: z.string().optional(),
  /** Name of an environment variable that holds the upstream's key (never the key itself). */
  api_key_env: z.string().optional(),
  timeout_ms: z.number().int().min(1).default(600_000),
});

/** Embedded llama.cpp via node-llama-cpp on CPU. */
export const LlamaCppEngineSchema = z.object({
  type: z.literal('llama-cpp'),
  gguf: z.string(),
  threads: z.number().int().min(1).optional(),
  context_size: z.number().int().min(16).optional(),
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
  engine: EngineConfigSchema,
});
export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;
export type CatalogEntryInput = z.input<typeof CatalogEntrySchema>;

export const CatalogFileSchema = z.object({ models: z.array(CatalogEntrySchema).min(1) });
export type CatalogFile = z.infer<typeof CatalogFileSchema>;

export function tierReaches(tier: Tier, entry: Pick<CatalogEntry, 'tiers'>): boolean {
  return entry.tiers.includes(tier);
}
