import { z } from 'zod';
import { NO_LOGPROBS } from './chat.js';
import { GenerationFields, ModelIdSchema, UsageSchema } from './common.js';
import { boundedText, TextLimits } from './text-limits.js';

// ---- request: POST /v1/completions (legacy) ----
export const CompletionRequestSchema = z
  .object({
    model: ModelIdSchema,
    /** The spec's prompt is one string (arrays of prompts and token arrays are not supported). */
    prompt: boundedText(TextLimits.prompt),
    ...GenerationFields,
    /** Legacy: the number of top log-probabilities; none are available here (400 naming it). */
    logprobs: z
      .number()
      .int()
      .min(0)
      .max(5)
      .nullable()
      .optional()
      .refine((v) => v == null, NO_LOGPROBS),
  })
  .meta({ id: 'CompletionRequest' });
export type CompletionRequest = z.infer<typeof CompletionRequestSchema>;

// ---- response ----
export const CompletionFinishReasonSchema = z.enum(['stop', 'length']);
export type CompletionFinishReason = z.infer<typeof CompletionFinishReasonSchema>;

export const CompletionSchema = z
  .object({
    id: z.string(),
    object: z.literal('text_completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        text: z.string(),
        index: z.number().int(),
        finish_reason: CompletionFinishReasonSchema,
        logprobs: z.null(),
      }),
    ),
    usage: UsageSchema,
  })
  .meta({ id: 'Completion' });
export type Completion = z.infer<typeof CompletionSchema>;

/**
 * One streamed item of /v1/completions. OpenAI streams legacy completions with the same object type
 * `text_completion`; `finish_reason` is null until the final content chunk, and `usage` is present
 * only on the extra last chunk asked for with `stream_options.include_usage`.
 */
export const CompletionChunkSchema = z
  .object({
    id: z.string(),
    object: z.literal('text_completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        text: z.string(),
        index: z.number().int(),
        finish_reason: CompletionFinishReasonSchema.nullable(),
        logprobs: z.null(),
      }),
    ),
    usage: UsageSchema.nullable().optional(),
  })
  .meta({ id: 'CompletionChunk' });
export type CompletionChunk = z.infer<typeof CompletionChunkSchema>;
