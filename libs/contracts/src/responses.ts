import { z } from 'zod';
import { FunctionNameSchema, NO_LOGPROBS } from './chat.js';
import { MaxTokensSchema, MetadataSchema, ModelIdSchema, TemperatureSchema, TopPSchema } from './common.js';
import { boundedText, TextLimits } from './text-limits.js';

// ---- input items (Responses format) ----
export const ResponseInputTextPartSchema = z.object({
  type: z.literal('input_text'),
  text: boundedText(TextLimits.prompt),
});
export const ResponseOutputTextPartSchema = z.object({
  type: z.literal('output_text'),
  text: boundedText(TextLimits.prompt),
  annotations: z.array(z.unknown()).optional(),
});
export const ResponseInputImagePartSchema = z.object({
  type: z.literal('input_image'),
  /** A public URL or a `data:` URI. */
  image_url: z.string().min(1),
  detail: z.enum(['auto', 'low', 'high']).optional(),
});
export const ResponseInputContentPartSchema = z.discriminatedUnion('type', [
  ResponseInputTextPartSchema,
  ResponseOutputTextPartSchema,
  ResponseInputImagePartSchema,
]);
export type ResponseInputContentPart = z.infer<typeof ResponseInputContentPartSchema>;

/**
 * A message of the `input` array: `{role, content}`, with or without `type: 'message'` (the OpenAI
 * SDKs send both forms; a replayed assistant output item also carries `id` and `status`, which are
 * stripped).
 */
export const ResponseInputMessageSchema = z
  .object({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: z.union([boundedText(TextLimits.prompt), z.array(ResponseInputContentPartSchema)]),
  })
  .meta({ id: 'ResponseInputMessage' });
export type ResponseInputMessage = z.infer<typeof ResponseInputMessageSchema>;

// ---- function calling items (input side) ----
/** A function call the model made earlier, replayed by the client (`call_id` links its output). */
export const ResponseFunctionCallInputSchema = z.object({
  type: z.literal('function_call'),
  call_id: z.string().min(1),
  name: FunctionNameSchema,
  arguments: boundedText(TextLimits.prompt),
  /** The `namespace` tool the function belongs to (sent to the model under its qualified name). */
  namespace: FunctionNameSchema.nullable().optional(),
  id: z.string().optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
});
/** The result of a function call, as the client ran it. */
export const ResponseFunctionCallOutputSchema = z.object({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1),
  output: z.union([boundedText(TextLimits.prompt), z.array(ResponseInputTextPartSchema)]),
  id: z.string().optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
});
/** A call of a `custom` (free-form) tool the model made earlier, replayed by the client. */
export const ResponseCustomToolCallInputSchema = z.object({
  type: z.literal('custom_tool_call'),
  call_id: z.string().min(1),
  name: FunctionNameSchema,
  input: boundedText(TextLimits.prompt),
  namespace: FunctionNameSchema.nullable().optional(),
  id: z.string().optional(),
});
/** The result of a custom tool call. */
export const ResponseCustomToolCallOutputSchema = z.object({
  type: z.literal('custom_tool_call_output'),
  call_id: z.string().min(1),
  output: z.union([boundedText(TextLimits.prompt), z.array(ResponseInputTextPartSchema)]),
  id: z.string().optional(),
});
/**
 * A hosted web search the platform ran in an earlier response, replayed by a stateless client. The
 * model saw its results in that turn; replayed, it tells the model what it searched for.
 */
export const ResponseWebSearchCallInputSchema = z.object({
  type: z.literal('web_search_call'),
  id: z.string().optional(),
  status: z.string().optional(),
  action: z
    .looseObject({
      type: z.string().optional(),
      query: boundedText(TextLimits.searchQuery).nullable().optional(),
    })
    .nullable()
    .optional(),
});
/** A reasoning item replayed from an earlier output: its text goes back as the assistant's reasoning. */
export const ResponseReasoningInputSchema = z.object({
  type: z.literal('reasoning'),
  id: z.string().optional(),
  summary: z
    .array(z.object({ type: z.literal('summary_text'), text: boundedText(TextLimits.prompt) }))
    .optional(),
  content: z
    .array(z.object({ type: z.literal('reasoning_text'), text: boundedText(TextLimits.prompt) }))
    .nullable()
    .optional(),
  /**
   * The sealed reasoning of an earlier response (`include: ["reasoning.encrypted_content"]`): the
   * chat-service opens it and gives the model its reasoning again; a blob it cannot open is a 400
   * naming `input[i].encrypted_content`.
   */
  encrypted_content: boundedText(TextLimits.prompt).nullable().optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).nullable().optional(),
});

/**
 * An output item of an earlier response, by id (what the Vercel AI SDK sends by default). The gateway
 * replaces it with the item it kept (responses-items: one hour, the key's member only) before the
 * request goes on; an unknown id is a 400 naming `input[i].id`.
 */
export const ResponseItemReferenceSchema = z.object({
  type: z.literal('item_reference'),
  id: z.string().min(1),
});
export type ResponseItemReference = z.infer<typeof ResponseItemReferenceSchema>;

export const ResponseInputItemSchema = z.union([
  ResponseInputMessageSchema,
  ResponseFunctionCallInputSchema,
  ResponseFunctionCallOutputSchema,
  ResponseCustomToolCallInputSchema,
  ResponseCustomToolCallOutputSchema,
  ResponseReasoningInputSchema,
  ResponseWebSearchCallInputSchema,
  ResponseItemReferenceSchema,
]);
export type ResponseInputItem = z.infer<typeof ResponseInputItemSchema>;

// ---- tools, tool_choice, text.format (Responses shapes) ----
/**
 * A field that may only ask for nothing: `ok` says which values do (null, false, empty ...); any
 * other value is a 400 naming the field with `why`.
 */
export function onlyNothing(ok: (v: unknown) => boolean, why: string) {
  return z.unknown().refine((v) => v === undefined || ok(v), why);
}
const isEmpty = (v: unknown) =>
  v == null ||
  v === false ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && v !== null && Object.keys(v).length === 0);
const directCallers = onlyNothing(
  (v) => v == null || (Array.isArray(v) && v.every((c) => c === 'direct')),
  "only 'direct' callers are supported (no programmatic tool calling)",
);
const noDeferLoading = onlyNothing(
  (v) => v == null || v === false,
  'deferred tool loading (tool search) is not supported',
);

/** A function tool in the Responses shape (flat: no `function` wrapper). */
export const ResponseFunctionToolSchema = z
  .strictObject({
    type: z.literal('function'),
    name: FunctionNameSchema,
    description: z.string().nullable().optional(),
    parameters: z.record(z.string(), z.unknown()).nullable().optional(),
    strict: z.boolean().nullable().optional(),
    allowed_callers: directCallers.optional(),
    defer_loading: noDeferLoading.optional(),
    output_schema: z.record(z.string(), z.unknown()).nullable().optional(),
  })
  .meta({ id: 'ResponseFunctionTool' });
export type ResponseFunctionTool = z.infer<typeof ResponseFunctionToolSchema>;

/**
 * A custom (free-form) tool: the model answers with raw text instead of JSON arguments. Offered to
 * the model as a function with one string argument `input`; a `grammar` format is shown to the model
 * in the description, not enforced (see docs/api-decisions.md).
 */
export const ResponseCustomToolSchema = z
  .strictObject({
    type: z.literal('custom'),
    name: FunctionNameSchema,
    description: z.string().nullable().optional(),
    format: z
      .discriminatedUnion('type', [
        z.strictObject({ type: z.literal('text') }),
        z.strictObject({
          type: z.literal('grammar'),
          syntax: z.enum(['lark', 'regex']),
          definition: boundedText(TextLimits.prompt),
        }),
      ])
      .nullable()
      .optional(),
    allowed_callers: directCallers.optional(),
    defer_loading: noDeferLoading.optional(),
  })
  .meta({ id: 'ResponseCustomTool' });
export type ResponseCustomTool = z.infer<typeof ResponseCustomToolSchema>;

/**
 * A group of functions (and custom tools) under one name: offered to the model as
 * `<namespace>__<name>`, mapped back to `{name, namespace}` on the way out.
 */
export const ResponseNamespaceToolSchema = z
  .strictObject({
    type: z.literal('namespace'),
    name: FunctionNameSchema,
    description: z.string().nullable().optional(),
    tools: z
      .array(z.discriminatedUnion('type', [ResponseFunctionToolSchema, ResponseCustomToolSchema]))
      .max(128),
  })
  .meta({ id: 'ResponseNamespaceTool' });
export type ResponseNamespaceTool = z.infer<typeof ResponseNamespaceToolSchema>;

/**
 * The hosted web search tool (`web_search`, `web_search_preview` and their dated names): the platform
 * runs the searches itself (search-service) inside the one /v1/responses call.
 */
export const ResponseWebSearchToolSchema = z
  .strictObject({
    type: z.enum([
      'web_search',
      'web_search_2025_08_26',
      'web_search_preview',
      'web_search_preview_2025_03_11',
    ]),
    /** Only `allowed_domains: null/[]` (asks for nothing): domain filters are not supported. */
    filters: onlyNothing(
      (v) =>
        isEmpty(v) ||
        (typeof v === 'object' &&
          v !== null &&
          Object.entries(v).every(([k, x]) => k === 'allowed_domains' && isEmpty(x))),
      'domain filters are not supported by the platform search',
    ).optional(),
    /** A hint: how much of the results to give the model. */
    search_context_size: z.enum(['low', 'medium', 'high']).nullable().optional(),
    /** A hint; results are not localized. */
    user_location: z.looseObject({ type: z.string().optional() }).nullable().optional(),
    /**
     * Codex CLI's (`web_search = "live"` true, `"cached"` false): a hint; the platform searches its
     * configured engine either way, identical queries served from its ~15-minute cache.
     */
    external_web_access: z.boolean().nullable().optional(),
  })
  .meta({ id: 'ResponseWebSearchTool' });
export type ResponseWebSearchTool = z.infer<typeof ResponseWebSearchToolSchema>;

/** Every tool type the platform takes; any other `type` is a 400 naming `tools[i].type`. */
export const ResponseToolSchema = z.discriminatedUnion('type', [
  ResponseFunctionToolSchema,
  ResponseCustomToolSchema,
  ResponseNamespaceToolSchema,
  ResponseWebSearchToolSchema,
]);
export type ResponseTool = z.infer<typeof ResponseToolSchema>;

export const ResponseToolChoiceSchema = z
  .union([
    z.enum(['auto', 'none', 'required']),
    z.strictObject({
      type: z.literal('function'),
      name: FunctionNameSchema,
      namespace: FunctionNameSchema.nullable().optional(),
    }),
    z.strictObject({ type: z.literal('custom'), name: FunctionNameSchema }),
  ])
  .meta({ id: 'ResponseToolChoice' });
export type ResponseToolChoice = z.infer<typeof ResponseToolChoiceSchema>;

export const ResponseTextFormatSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('text') }),
    z.strictObject({ type: z.literal('json_object') }),
    z.strictObject({
      type: z.literal('json_schema'),
      name: z.string().min(1).max(64),
      description: z.string().optional(),
      strict: z.boolean().nullable().optional(),
      schema: z.record(z.string(), z.unknown()),
    }),
  ])
  .meta({ id: 'ResponseTextFormat' });
export type ResponseTextFormat = z.infer<typeof ResponseTextFormatSchema>;

export const ResponseTextConfigSchema = z.strictObject({
  format: ResponseTextFormatSchema.nullable().optional(),
  /** A hint (accepted, not steered). */
  verbosity: z.enum(['low', 'medium', 'high']).nullable().optional(),
});

/** What `include` may name (OpenAI's list). See ResponseRequestSchema.include. */
export const ResponseIncludableSchema = z.enum([
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
  'reasoning.encrypted_content',
  'message.output_text.logprobs',
]);

/** OpenAI's reasoning efforts; the chat-service maps them onto the model's reasoning mode. */
export const ResponseReasoningEffortSchema = z.enum([
  'none',
  'minimal',
  'low',
  'medium',
  'high',
  'xhigh',
  'max',
]);

export const ResponseReasoningConfigSchema = z.strictObject({
  effort: ResponseReasoningEffortSchema.nullable().optional(),
  /** Hints: the reasoning comes back whole (`content`), never summarized. */
  summary: z.enum(['auto', 'concise', 'detailed']).nullable().optional(),
  generate_summary: z.enum(['auto', 'concise', 'detailed']).nullable().optional(),
  context: z.enum(['auto', 'current_turn', 'all_turns']).nullable().optional(),
  mode: onlyNothing(
    (v) => v == null || v === 'standard',
    "only the 'standard' reasoning mode exists",
  ).optional(),
});

const hint = (max = 1024) => z.string().max(max).nullable().optional();

// ---- request: POST /v1/responses ----
/**
 * Strict, and lenient where the OpenAI SDK's types are: every field of `ResponseCreateParams` is
 * listed. Values that ask for nothing (null, empty arrays and objects, defaults) and hints
 * (`prompt_cache_key`, `safety_identifier`, `service_tier`, `text.verbosity`, `reasoning.summary` ...)
 * are accepted; a value asking for behaviour the platform does not deliver (`background: true`,
 * `truncation: 'auto'`, a `conversation`, a `prompt` template, log-probabilities ...) is a 400 naming
 * the field. A field outside the list is a 400 naming it. The list is in docs/api-decisions.md and
 * test/integration/responses-leniency.spec.ts checks it against the SDK's own types.
 */
export const ResponseRequestSchema = z
  .strictObject({
    model: ModelIdSchema,
    input: z.union(
      [boundedText(TextLimits.prompt), z.array(ResponseInputItemSchema).min(1, 'must not be an empty array')],
      {
        error: (iss) => (iss.input === undefined ? undefined : 'must be a string or an array of input items'),
      },
    ),
    /** System-level instructions, placed before `input`. */
    instructions: boundedText(TextLimits.prompt).nullable().optional(),
    /** Default from the catalog entry (65536 on chat-E). */
    max_output_tokens: MaxTokensSchema.nullable().optional(),
    temperature: TemperatureSchema.nullable().optional(),
    top_p: TopPSchema.nullable().optional(),
    /**
     * `true`: the Responses event sequence (`response.created` ... deltas ... `response.completed`
     * carrying the whole response), see docs/api-decisions.md.
     */
    stream: z.boolean().nullable().optional(),
    /** `include_obfuscation` is a hint (no obfuscation padding is sent). */
    stream_options: z.strictObject({ include_obfuscation: z.boolean().optional() }).nullable().optional(),
    user: boundedText(TextLimits.user).nullable().optional(),
    /** Function, custom, namespace and hosted web_search tools (the models whose capabilities list `tools`). */
    tools: z.array(ResponseToolSchema).max(128).optional(),
    tool_choice: ResponseToolChoiceSchema.nullable().optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    /** `text.format`: text, json_object or json_schema (models whose capabilities list response_format). */
    text: ResponseTextConfigSchema.nullable().optional(),
    /** Echoed in the response (up to 16 string pairs, as OpenAI). */
    metadata: MetadataSchema.nullable().optional(),
    /**
     * Default true: the response and its input items are kept for the member (RESPONSES_RETENTION_DAYS)
     * for `previous_response_id`, `GET /v1/responses/{id}` and `item_reference`; `false` keeps nothing.
     */
    store: z.boolean().nullable().optional(),
    /** Continues a stored response of the same member (404 naming it when unknown or expired). */
    previous_response_id: z.string().min(1).max(128).nullable().optional(),
    /** `reasoning.encrypted_content` seals the reasoning for stateless clients; `message.output_text.logprobs` is a 400. */
    include: z
      .array(ResponseIncludableSchema)
      .max(16)
      .nullable()
      .optional()
      .refine((v) => !v?.includes('message.output_text.logprobs'), NO_LOGPROBS),
    reasoning: ResponseReasoningConfigSchema.nullable().optional(),
    // ---- hints: accepted, change nothing ----
    prompt_cache_key: hint(),
    prompt_cache_retention: z.enum(['in_memory', '24h']).nullable().optional(),
    prompt_cache_options: z
      .strictObject({ mode: z.enum(['implicit', 'explicit']).optional(), ttl: z.string().max(16).optional() })
      .nullable()
      .optional(),
    safety_identifier: hint(),
    /** Answered by the one tier there is; the response says `service_tier: 'default'`. */
    service_tier: z.enum(['auto', 'default', 'flex', 'scale', 'priority']).nullable().optional(),
    /** Sent by Codex CLI (string pairs about the client, e.g. turn metadata as JSON); kept nowhere. */
    client_metadata: z.record(z.string().max(256), z.string().max(65_536)).nullable().optional(),
    // ---- only "nothing" is accepted ----
    background: onlyNothing(
      (v) => v == null || v === false,
      'background responses are not supported',
    ).optional(),
    truncation: onlyNothing(
      (v) => v == null || v === 'disabled',
      "only 'disabled' is supported: a request over the context window is a 400",
    ).optional(),
    conversation: onlyNothing(
      (v) => v == null,
      'conversations are not supported; use previous_response_id',
    ).optional(),
    prompt: onlyNothing((v) => v == null, 'stored prompt templates are not supported').optional(),
    context_management: onlyNothing(isEmpty, 'context management (compaction) is not supported').optional(),
    moderation: onlyNothing((v) => v == null, 'moderation is not supported').optional(),
    top_logprobs: onlyNothing((v) => v == null || v === 0, NO_LOGPROBS).optional(),
  })
  .meta({ id: 'ResponseRequest' });
export type ResponseRequest = z.infer<typeof ResponseRequestSchema>;

// ---- ResponseObject ----
export const ResponseReasoningItemSchema = z
  .object({
    id: z.string(),
    type: z.literal('reasoning'),
    summary: z.array(z.object({ type: z.literal('summary_text'), text: z.string() })),
    content: z.array(z.object({ type: z.literal('reasoning_text'), text: z.string() })),
    /** With `include: ["reasoning.encrypted_content"]`: the reasoning sealed by the platform (opaque). */
    encrypted_content: z.string().nullable().optional(),
  })
  .meta({ id: 'ResponseReasoningItem' });
export type ResponseReasoningItem = z.infer<typeof ResponseReasoningItemSchema>;

export const ResponseMessageItemSchema = z
  .object({
    id: z.string(),
    type: z.literal('message'),
    role: z.literal('assistant'),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
    content: z.array(
      z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.unknown()) }),
    ),
  })
  .meta({ id: 'ResponseMessageItem' });
export type ResponseMessageItem = z.infer<typeof ResponseMessageItemSchema>;

export const ResponseFunctionCallItemSchema = z
  .object({
    id: z.string(),
    type: z.literal('function_call'),
    call_id: z.string(),
    name: z.string(),
    arguments: z.string(),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
    /** Set when the function belongs to a `namespace` tool (`name` is then its name inside it). */
    namespace: z.string().optional(),
  })
  .meta({ id: 'ResponseFunctionCallItem' });
export type ResponseFunctionCallItem = z.infer<typeof ResponseFunctionCallItemSchema>;

export const ResponseCustomToolCallItemSchema = z
  .object({
    id: z.string(),
    type: z.literal('custom_tool_call'),
    call_id: z.string(),
    name: z.string(),
    input: z.string(),
    status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
    namespace: z.string().optional(),
  })
  .meta({ id: 'ResponseCustomToolCallItem' });
export type ResponseCustomToolCallItem = z.infer<typeof ResponseCustomToolCallItemSchema>;

/**
 * A hosted web search the platform ran inside the response (the `web_search` tool): `action.query` is
 * what the model searched for, `action.sources` the URLs it got back; `status` `failed` when the
 * search could not run.
 */
export const ResponseWebSearchCallItemSchema = z
  .object({
    id: z.string(),
    type: z.literal('web_search_call'),
    status: z.enum(['in_progress', 'searching', 'completed', 'failed']),
    action: z.object({
      type: z.literal('search'),
      query: z.string(),
      sources: z.array(z.object({ type: z.literal('url'), url: z.string() })).optional(),
    }),
  })
  .meta({ id: 'ResponseWebSearchCallItem' });
export type ResponseWebSearchCallItem = z.infer<typeof ResponseWebSearchCallItemSchema>;

export const ResponseOutputItemSchema = z.discriminatedUnion('type', [
  ResponseReasoningItemSchema,
  ResponseMessageItemSchema,
  ResponseFunctionCallItemSchema,
  ResponseCustomToolCallItemSchema,
  ResponseWebSearchCallItemSchema,
]);
export type ResponseOutputItem = z.infer<typeof ResponseOutputItemSchema>;

export const ResponseUsageSchema = z
  .object({
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    total_tokens: z.number().int(),
    /** OpenAI's breakdowns (the SDKs type them): cached prompt tokens, reasoning tokens of the output. */
    input_tokens_details: z.object({ cached_tokens: z.number().int() }).optional(),
    output_tokens_details: z.object({ reasoning_tokens: z.number().int() }).optional(),
  })
  .meta({ id: 'ResponseUsage' });
export type ResponseUsage = z.infer<typeof ResponseUsageSchema>;

/** `completed` is the only status the spec shows; the others are OpenAI's. */
export const ResponseStatusSchema = z.enum([
  'completed',
  'failed',
  'in_progress',
  'cancelled',
  'queued',
  'incomplete',
]);
export type ResponseStatus = z.infer<typeof ResponseStatusSchema>;

export const ResponseObjectSchema = z
  .object({
    id: z.string(),
    object: z.literal('response'),
    created_at: z.number().int(),
    model: z.string(),
    status: ResponseStatusSchema,
    /** `reasoning` (only on models that reason), then `message` and/or `function_call` items. */
    output: z.array(ResponseOutputItemSchema),
    usage: ResponseUsageSchema,
    instructions: z.string().nullable().optional(),
    max_output_tokens: z.number().int().nullable().optional(),
    temperature: z.number().nullable().optional(),
    top_p: z.number().nullable().optional(),
    error: z.object({ code: z.string(), message: z.string() }).nullable().optional(),
    incomplete_details: z.object({ reason: z.string() }).nullable().optional(),
    /** The request's function tools, normalized tool_choice and parallel_tool_calls (OpenAI's required fields). */
    tools: z.array(ResponseToolSchema).optional(),
    tool_choice: ResponseToolChoiceSchema.optional(),
    parallel_tool_calls: z.boolean().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    text: z.object({ format: ResponseTextFormatSchema }).optional(),
    store: z.boolean().optional(),
    previous_response_id: z.string().nullable().optional(),
    service_tier: z.string().optional(),
    reasoning: z.object({ effort: z.string().nullable(), summary: z.string().nullable() }).optional(),
  })
  .meta({ id: 'ResponseObject' });
export type ResponseObject = z.infer<typeof ResponseObjectSchema>;

/**
 * One event of a streamed /v1/responses call (OpenAI's shapes): `response.created`,
 * `response.in_progress`, `response.output_item.added` / `.done`, `response.content_part.added` /
 * `.done`, `response.reasoning_text.delta` / `.done`, `response.output_text.delta` / `.done`,
 * `response.function_call_arguments.delta` / `.done`, and last `response.completed`. Each carries
 * `type` (also the SSE `event:` name) and `sequence_number` (0, 1, 2 ... in order).
 */
export const ResponseStreamEventSchema = z
  .looseObject({ type: z.string(), sequence_number: z.number().int().min(0) })
  .meta({ id: 'ResponseStreamEvent' });
export type ResponseStreamEvent = z.infer<typeof ResponseStreamEventSchema>;

/** The terminal event of a streamed /v1/responses call, carrying the whole response (OpenAI's shape). */
export const ResponseCompletedEventSchema = z
  .object({
    type: z.literal('response.completed'),
    response: ResponseObjectSchema,
    sequence_number: z.number().int().min(0).optional(),
  })
  .meta({ id: 'ResponseCompletedEvent' });
export type ResponseCompletedEvent = z.infer<typeof ResponseCompletedEventSchema>;

// ---- stored responses: DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items ----
export const ResponseDeletedSchema = z
  .object({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) })
  .meta({ id: 'ResponseDeleted' });
export type ResponseDeleted = z.infer<typeof ResponseDeletedSchema>;

/** A page of the input items a stored response's model saw (its chain included), each with an `id`. */
export const ResponseInputItemListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(z.looseObject({ id: z.string(), type: z.string().optional() })),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({ id: 'ResponseInputItemList' });
export type ResponseInputItemList = z.infer<typeof ResponseInputItemListSchema>;
