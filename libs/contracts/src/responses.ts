import { z } from 'zod';
import { FunctionNameSchema } from './chat.js';
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
    content: z.union([boundedText(TextLimits.prompt), z.array(ResponseInputContentPartSchema).min(1)]),
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
  id: z.string().optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
});
/** The result of a function call, as the client ran it. */
export const ResponseFunctionCallOutputSchema = z.object({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1),
  output: z.union([boundedText(TextLimits.prompt), z.array(ResponseInputTextPartSchema).min(1)]),
  id: z.string().optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
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
  encrypted_content: z.null().optional(),
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
  ResponseReasoningInputSchema,
  ResponseItemReferenceSchema,
]);
export type ResponseInputItem = z.infer<typeof ResponseInputItemSchema>;

// ---- tools, tool_choice, text.format (Responses shapes) ----
/** A function tool in the Responses shape (flat: no `function` wrapper). Other tool types are 400s. */
export const ResponseFunctionToolSchema = z
  .strictObject({
    type: z.literal('function'),
    name: FunctionNameSchema,
    description: z.string().nullable().optional(),
    parameters: z.record(z.string(), z.unknown()).nullable().optional(),
    strict: z.boolean().nullable().optional(),
  })
  .meta({ id: 'ResponseFunctionTool' });
export type ResponseFunctionTool = z.infer<typeof ResponseFunctionToolSchema>;

export const ResponseToolChoiceSchema = z
  .union([
    z.enum(['auto', 'none', 'required']),
    z.strictObject({ type: z.literal('function'), name: FunctionNameSchema }),
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

export const ResponseTextConfigSchema = z.strictObject({ format: ResponseTextFormatSchema.optional() });

// ---- request: POST /v1/responses ----
/**
 * Strict: a field the platform does not support (`previous_response_id`, `reasoning`, `include`,
 * `truncation` ...) is a 400 naming it rather than silently dropped.
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
    user: boundedText(TextLimits.user).optional(),
    /** Function tools (the models whose capabilities list `tools`). */
    tools: z.array(ResponseFunctionToolSchema).max(128).optional(),
    tool_choice: ResponseToolChoiceSchema.optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    /** `text.format`: text, json_object or json_schema (models whose capabilities list response_format). */
    text: ResponseTextConfigSchema.optional(),
    /** Echoed in the response (up to 16 string pairs, as OpenAI). */
    metadata: MetadataSchema.nullable().optional(),
    /**
     * Default true: the output items are kept for an hour so that later requests may name them with
     * `item_reference`; `false` keeps nothing. Whole responses cannot be retrieved.
     */
    store: z.boolean().nullable().optional(),
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
  })
  .meta({ id: 'ResponseFunctionCallItem' });
export type ResponseFunctionCallItem = z.infer<typeof ResponseFunctionCallItemSchema>;

export const ResponseOutputItemSchema = z.discriminatedUnion('type', [
  ResponseReasoningItemSchema,
  ResponseMessageItemSchema,
  ResponseFunctionCallItemSchema,
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
    tools: z.array(ResponseFunctionToolSchema).optional(),
    tool_choice: ResponseToolChoiceSchema.optional(),
    parallel_tool_calls: z.boolean().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    text: z.object({ format: ResponseTextFormatSchema }).optional(),
    store: z.boolean().optional(),
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
