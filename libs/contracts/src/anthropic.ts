import { z } from 'zod';
import { ModelIdSchema } from './common.js';
import { boundedText, TextLimits } from './text-limits.js';

/**
 * The Anthropic Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) as the gateway
 * serves it: requests, the Message object, the stream events and the error body. Requests are
 * translated onto the chat completion body (apps/gateway/src/messages/translate-request.ts); what is
 * accepted and ignored, and what is refused, is listed in docs/api-decisions.md ("Anthropic Messages").
 *
 * Block objects are not strict (a field we do not read, e.g. `citations: null` or `caller`, passes);
 * the top level is: a field nobody knows is a 400 naming it, as Anthropic's own API answers.
 */

const CacheControlSchema = z
  .object({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() })
  .nullable()
  .optional();

export const AnthropicTextBlockSchema = z.object({
  type: z.literal('text'),
  text: boundedText(TextLimits.prompt),
  cache_control: CacheControlSchema,
  citations: z.array(z.unknown()).nullable().optional(),
});

/** Image media types Anthropic accepts. */
export const ANTHROPIC_IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

export const AnthropicImageBlockSchema = z.object({
  type: z.literal('image'),
  source: z.discriminatedUnion('type', [
    z.object({
      type: z.literal('base64'),
      media_type: z.enum(ANTHROPIC_IMAGE_TYPES),
      data: z.string().min(1),
    }),
    z.object({ type: z.literal('url'), url: z.string().min(1) }),
  ]),
  cache_control: CacheControlSchema,
});

/** A plain-text document (the only document source we read: PDFs and files are refused). */
export const AnthropicDocumentBlockSchema = z.object({
  type: z.literal('document'),
  source: z.discriminatedUnion('type', [
    z.object({
      type: z.literal('text'),
      media_type: z.literal('text/plain'),
      data: boundedText(TextLimits.prompt),
    }),
    z.object({
      type: z.literal('content'),
      content: z.union([z.string(), z.array(AnthropicTextBlockSchema)]),
    }),
  ]),
  title: z.string().nullable().optional(),
  context: z.string().nullable().optional(),
  cache_control: CacheControlSchema,
  citations: z.unknown().optional(),
});

export const AnthropicToolUseBlockSchema = z.object({
  type: z.literal('tool_use'),
  id: boundedText(TextLimits.toolCallId).min(1),
  name: boundedText(TextLimits.name).min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: CacheControlSchema,
});

export const AnthropicToolResultBlockSchema = z.object({
  type: z.literal('tool_result'),
  tool_use_id: boundedText(TextLimits.toolCallId).min(1),
  content: z
    .union([
      boundedText(TextLimits.prompt),
      z.array(z.discriminatedUnion('type', [AnthropicTextBlockSchema, AnthropicImageBlockSchema])),
    ])
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: CacheControlSchema,
});

export const AnthropicThinkingBlockSchema = z.object({
  type: z.literal('thinking'),
  thinking: boundedText(TextLimits.prompt),
  signature: z.string().optional(),
});

export const AnthropicRedactedThinkingBlockSchema = z.object({
  type: z.literal('redacted_thinking'),
  data: z.string(),
});

export const AnthropicContentBlockParamSchema = z.discriminatedUnion('type', [
  AnthropicTextBlockSchema,
  AnthropicImageBlockSchema,
  AnthropicDocumentBlockSchema,
  AnthropicToolUseBlockSchema,
  AnthropicToolResultBlockSchema,
  AnthropicThinkingBlockSchema,
  AnthropicRedactedThinkingBlockSchema,
]);
export type AnthropicContentBlockParam = z.infer<typeof AnthropicContentBlockParamSchema>;

export const AnthropicMessageParamSchema = z.discriminatedUnion('role', [
  z.object({
    role: z.enum(['user', 'assistant']),
    content: z.union([boundedText(TextLimits.prompt), z.array(AnthropicContentBlockParamSchema)]),
  }),
  /** A system turn inside the conversation (Claude Code 2.1 sends its environment this way). */
  z.object({
    role: z.literal('system'),
    content: z.union([boundedText(TextLimits.prompt), z.array(AnthropicTextBlockSchema)]),
  }),
]);
export type AnthropicMessageParam = z.infer<typeof AnthropicMessageParamSchema>;

/** Tool names: the engine's rule (1-64 letters, digits, underscores, dashes). */
export const AnthropicToolNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'tool name must be 1-64 letters, digits, underscores or dashes');

/**
 * A client tool. Anthropic's server tools (`web_search_20250305`, `bash_20250124`, `code_execution_...`)
 * carry another `type` and are refused (the gateway runs no tools itself).
 */
export const AnthropicToolSchema = z.object({
  type: z.literal('custom').nullable().optional(),
  name: AnthropicToolNameSchema,
  description: boundedText(TextLimits.description).optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
  cache_control: CacheControlSchema,
  strict: z.boolean().optional(),
  /** Scheduling hints of Anthropic's own tool runner: nothing to do here. */
  defer_loading: z.boolean().optional(),
  eager_input_streaming: z.boolean().nullable().optional(),
  input_examples: z.array(z.unknown()).optional(),
  allowed_callers: z.array(z.string()).optional(),
});
export type AnthropicTool = z.infer<typeof AnthropicToolSchema>;

const disableParallel = { disable_parallel_tool_use: z.boolean().optional() };
export const AnthropicToolChoiceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), ...disableParallel }),
  z.object({ type: z.literal('any'), ...disableParallel }),
  z.object({ type: z.literal('tool'), name: AnthropicToolNameSchema, ...disableParallel }),
  z.object({ type: z.literal('none') }),
]);
export type AnthropicToolChoice = z.infer<typeof AnthropicToolChoiceSchema>;

const display = { display: z.enum(['summarized', 'omitted']).nullable().optional() };
export const AnthropicThinkingConfigSchema = z.discriminatedUnion('type', [
  /** Anthropic's minimum budget is 1,024 tokens, and it must be below max_tokens (checked with it). */
  z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024), ...display }),
  z.object({ type: z.literal('disabled') }),
  z.object({ type: z.literal('adaptive'), ...display }),
]);
export type AnthropicThinkingConfig = z.infer<typeof AnthropicThinkingConfigSchema>;

export const AnthropicOutputConfigSchema = z.object({
  effort: z.enum(['low', 'medium', 'high', 'xhigh', 'max']).nullable().optional(),
  format: z
    .object({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) })
    .nullable()
    .optional(),
});

/** At most 4, as the engines' `stop` (OpenAI's rule); each up to 256 characters. */
const StopSequencesSchema = z.array(boundedText(TextLimits.stop).min(1)).max(4);

/**
 * Fields of Anthropic's API that ask for nothing we must do, or that we may safely ignore: accepted and
 * dropped (docs/api-decisions.md lists them with the reason).
 */
const IgnoredFields = {
  metadata: z.object({ user_id: z.string().nullable().optional() }).loose().optional(),
  context_management: z.unknown().optional(),
  cache_control: CacheControlSchema,
  service_tier: z.enum(['auto', 'standard_only']).optional(),
  inference_geo: z.string().nullable().optional(),
  diagnostics: z.unknown().optional(),
  user_profile_id: z.string().optional(),
  workspace_id: z.string().optional(),
  /** Only `null` (no code-execution container): a container asks for a sandbox we do not run. */
  container: z.null().optional(),
  /** `standard` only: fast mode is a faster, priced generation we do not offer. */
  speed: z.literal('standard').nullable().optional(),
};

export const AnthropicMessagesRequestSchema = z
  .strictObject({
    model: ModelIdSchema,
    max_tokens: z.number().int().min(1),
    messages: z.array(AnthropicMessageParamSchema).min(1, 'messages must contain at least one message'),
    system: z.union([boundedText(TextLimits.prompt), z.array(AnthropicTextBlockSchema)]).optional(),
    stop_sequences: StopSequencesSchema.optional(),
    stream: z.boolean().optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    thinking: AnthropicThinkingConfigSchema.optional(),
    tool_choice: AnthropicToolChoiceSchema.optional(),
    tools: z.array(AnthropicToolSchema).max(128).optional(),
    output_config: AnthropicOutputConfigSchema.optional(),
    ...IgnoredFields,
  })
  .meta({ id: 'AnthropicMessagesRequest' });
export type AnthropicMessagesRequest = z.infer<typeof AnthropicMessagesRequestSchema>;

/** `POST /v1/messages/count_tokens`: the request without the generation fields. */
export const AnthropicCountTokensRequestSchema = z
  .strictObject({
    model: ModelIdSchema,
    messages: z.array(AnthropicMessageParamSchema).min(1, 'messages must contain at least one message'),
    system: z.union([boundedText(TextLimits.prompt), z.array(AnthropicTextBlockSchema)]).optional(),
    thinking: AnthropicThinkingConfigSchema.optional(),
    tool_choice: AnthropicToolChoiceSchema.optional(),
    tools: z.array(AnthropicToolSchema).max(128).optional(),
    output_config: AnthropicOutputConfigSchema.optional(),
    context_management: IgnoredFields.context_management,
    cache_control: IgnoredFields.cache_control,
    diagnostics: IgnoredFields.diagnostics,
  })
  .meta({ id: 'AnthropicCountTokensRequest' });
export type AnthropicCountTokensRequest = z.infer<typeof AnthropicCountTokensRequestSchema>;

export const AnthropicCountTokensResponseSchema = z
  .object({ input_tokens: z.number().int().min(0) })
  .meta({ id: 'AnthropicCountTokensResponse' });
export type AnthropicCountTokensResponse = z.infer<typeof AnthropicCountTokensResponseSchema>;

/**
 * Top-level fields of Anthropic's API that ask for behaviour this platform does not deliver, with
 * what to do instead: each is a 400 naming it (rather than the generic "unknown field" answer).
 */
export const ANTHROPIC_UNSUPPORTED_FIELDS: Readonly<Record<string, string>> = {
  mcp_servers: 'the MCP connector is not available here: run MCP servers in the client',
  container: 'code-execution containers are not available here',
  speed: "only speed 'standard' is offered",
};

// ---- responses ----

export const AnthropicStopReasonSchema = z.enum(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use']);
export type AnthropicStopReason = z.infer<typeof AnthropicStopReasonSchema>;

export const AnthropicUsageSchema = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cache_creation_input_tokens: z.number().int().nullable(),
  cache_read_input_tokens: z.number().int().nullable(),
});
export type AnthropicUsage = z.infer<typeof AnthropicUsageSchema>;

export const AnthropicContentBlockSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string() }),
  z.object({
    type: z.literal('tool_use'),
    id: z.string(),
    name: z.string(),
    input: z.record(z.string(), z.unknown()),
  }),
]);
export type AnthropicContentBlock = z.infer<typeof AnthropicContentBlockSchema>;

export const AnthropicMessageSchema = z
  .object({
    id: z.string(),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string(),
    content: z.array(AnthropicContentBlockSchema),
    stop_reason: AnthropicStopReasonSchema.nullable(),
    stop_sequence: z.string().nullable(),
    usage: AnthropicUsageSchema,
  })
  .meta({ id: 'AnthropicMessage' });
export type AnthropicMessage = z.infer<typeof AnthropicMessageSchema>;

export const AnthropicContentDeltaSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text_delta'), text: z.string() }),
  z.object({ type: z.literal('input_json_delta'), partial_json: z.string() }),
  z.object({ type: z.literal('thinking_delta'), thinking: z.string() }),
  z.object({ type: z.literal('signature_delta'), signature: z.string() }),
]);

export const AnthropicErrorTypeSchema = z.enum([
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'timeout_error',
  'overloaded_error',
]);
export type AnthropicErrorType = z.infer<typeof AnthropicErrorTypeSchema>;

export const AnthropicErrorBodySchema = z
  .object({
    type: z.literal('error'),
    error: z.object({ type: AnthropicErrorTypeSchema, message: z.string() }),
    request_id: z.string().nullable().optional(),
  })
  .meta({ id: 'AnthropicError' });
export type AnthropicErrorBody = z.infer<typeof AnthropicErrorBodySchema>;

/** The stream's event grammar: message_start, (content_block_start, delta*, stop)*, message_delta, message_stop. */
export const AnthropicStreamEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('message_start'),
    message: AnthropicMessageSchema.extend({ stop_reason: z.null() }),
  }),
  z.object({
    type: z.literal('content_block_start'),
    index: z.number().int(),
    content_block: AnthropicContentBlockSchema,
  }),
  z.object({
    type: z.literal('content_block_delta'),
    index: z.number().int(),
    delta: AnthropicContentDeltaSchema,
  }),
  z.object({ type: z.literal('content_block_stop'), index: z.number().int() }),
  z.object({
    type: z.literal('message_delta'),
    delta: z.object({
      stop_reason: AnthropicStopReasonSchema.nullable(),
      stop_sequence: z.string().nullable(),
    }),
    usage: z.object({ output_tokens: z.number().int(), input_tokens: z.number().int().optional() }),
  }),
  z.object({ type: z.literal('message_stop') }),
  z.object({ type: z.literal('ping') }),
  z.object({ type: z.literal('error'), error: AnthropicErrorBodySchema.shape.error }),
]);
export type AnthropicStreamEvent = z.infer<typeof AnthropicStreamEventSchema>;

/** Anthropic's list shape of GET /v1/models (sent when the request carries `anthropic-version`). */
export const AnthropicModelListSchema = z
  .object({
    data: z.array(
      z.object({
        type: z.literal('model'),
        id: z.string(),
        display_name: z.string(),
        created_at: z.string(),
      }),
    ),
    has_more: z.boolean(),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
  })
  .meta({ id: 'AnthropicModelList' });
export type AnthropicModelList = z.infer<typeof AnthropicModelListSchema>;

/**
 * The Anthropic error `type` of one of our statuses. Statuses keep their meaning (our limits and
 * quotas answer as they do on the OpenAI paths); only the body's shape changes.
 */
export function anthropicErrorType(status: number): AnthropicErrorType {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
    case 524:
      return 'timeout_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** The HTTP status an Anthropic client gets: 503 (no replica, overloaded) is Anthropic's 529, 524 its 504. */
export function anthropicStatus(status: number): number {
  if (status === 503) return 529;
  if (status === 524) return 504;
  return status;
}

/** `{type: 'error', error: {type, message}, request_id}`. */
export function anthropicErrorBody(
  status: number,
  message: string,
  requestId: string | null,
): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message }, request_id: requestId };
}
