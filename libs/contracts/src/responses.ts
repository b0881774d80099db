import { z } from 'zod';
import { MaxTokensSchema, ModelIdSchema, TemperatureSchema, TopPSchema } from './common.js';
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

// ---- request: POST /v1/responses ----
export const ResponseRequestSchema = z
  .object({
    model: ModelIdSchema,
    input: z.union(
      [
        boundedText(TextLimits.prompt),
        z.array(ResponseInputMessageSchema).min(1, 'must not be an empty array'),
      ],
      {
        error: (iss) =>
          iss.input === undefined ? undefined : 'must be a string or an array of message items',
      },
    ),
    /** System-level instructions, placed before `input`. */
    instructions: boundedText(TextLimits.prompt).nullable().optional(),
    /** Default from the catalog entry (65536 on chat-E). */
    max_output_tokens: MaxTokensSchema.nullable().optional(),
    temperature: TemperatureSchema.nullable().optional(),
    top_p: TopPSchema.nullable().optional(),
    /** The service does not stream incrementally: with `true` it emits one `response.completed` event. */
    stream: z.boolean().nullable().optional(),
    user: boundedText(TextLimits.user).optional(),
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

export const ResponseOutputItemSchema = z.discriminatedUnion('type', [
  ResponseReasoningItemSchema,
  ResponseMessageItemSchema,
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
    /** `reasoning` (only on models that reason) followed by `message`. */
    output: z.array(ResponseOutputItemSchema),
    usage: ResponseUsageSchema,
    instructions: z.string().nullable().optional(),
    max_output_tokens: z.number().int().nullable().optional(),
    temperature: z.number().nullable().optional(),
    top_p: z.number().nullable().optional(),
    error: z.object({ code: z.string(), message: z.string() }).nullable().optional(),
    incomplete_details: z.object({ reason: z.string() }).nullable().optional(),
  })
  .meta({ id: 'ResponseObject' });
export type ResponseObject = z.infer<typeof ResponseObjectSchema>;

/** The one terminal event of a streamed /v1/responses call (OpenAI's shape). */
export const ResponseCompletedEventSchema = z
  .object({
    type: z.literal('response.completed'),
    response: ResponseObjectSchema,
    sequence_number: z.number().int().min(0).optional(),
  })
  .meta({ id: 'ResponseCompletedEvent' });
export type ResponseCompletedEvent = z.infer<typeof ResponseCompletedEventSchema>;
