import { z } from 'zod';
import { boundedText, TextLimits } from './text-limits.js';

export const ModelIdSchema = boundedText(TextLimits.model).min(1, 'model must not be empty');
export const TemperatureSchema = z.number().min(0).max(2);
export const TopPSchema = z.number().min(0).max(1);
export const MaxTokensSchema = z.number().int().min(1);

/**
 * Length, sampling and streaming fields shared by /chat/completions and /completions (the same rules
 * on both; spread into each request schema).
 */
export const GenerationFields = {
  max_tokens: MaxTokensSchema.nullable().optional(),
  temperature: TemperatureSchema.nullable().optional(),
  top_p: TopPSchema.nullable().optional(),
  n: z.number().int().min(1).max(8).nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
  stop: z
    .union([boundedText(TextLimits.stop), z.array(boundedText(TextLimits.stop)).max(4)])
    .nullable()
    .optional(),
  seed: z.number().int().nullable().optional(),
  user: boundedText(TextLimits.user).optional(),
};

/** `metadata` of responses and batches: up to 16 pairs, keys up to 64 characters, values up to 512 (as OpenAI). */
export const MetadataSchema = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, { message: 'at most 16 metadata pairs' });

/** Spec defaults for sampling. */
export const SAMPLING_DEFAULTS = { temperature: 0.6, top_p: 0.95 } as const;

export const UsageSchema = z
  .object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
  })
  .meta({ id: 'Usage' });
export type Usage = z.infer<typeof UsageSchema>;

export const ModelSchema = z
  .object({
    id: z.string(),
    object: z.literal('model'),
    created: z.number().int(),
    owned_by: z.string(),
    /** Extension: the endpoints that serve this model (e.g. `/v1/chat/completions`, `/v1/responses`). */
    endpoints: z.array(z.string()).optional(),
  })
  .meta({ id: 'Model' });
export type Model = z.infer<typeof ModelSchema>;

export const ModelListSchema = z
  .object({ object: z.literal('list'), data: z.array(ModelSchema) })
  .meta({ id: 'ModelList' });
export type ModelList = z.infer<typeof ModelListSchema>;

/**
 * Turns the text fields of a multipart form into the object the form schemas parse: a field sent once
 * keeps its value, a repeated field becomes an array, and the `name[]` spelling of array fields (as the
 * OpenAI SDKs send `timestamp_granularities[]`) is folded into `name`.
 */
export function normalizeFormFields(
  fields: Iterable<readonly [string, unknown]> | Record<string, unknown>,
): Record<string, unknown> {
  const entries: Iterable<readonly [string, unknown]> =
    Symbol.iterator in fields
      ? (fields as Iterable<readonly [string, unknown]>)
      : Object.entries(fields as Record<string, unknown>);
  const out: Record<string, unknown> = {};
  for (const [rawKey, value] of entries) {
    if (typeof rawKey !== 'string' || !rawKey) continue; // a part without a name (the reader refuses it)
    const key = rawKey.endsWith('[]') ? rawKey.slice(0, -2) : rawKey;
    if (key === '__proto__') continue;
    const values = Array.isArray(value) ? value : [value];
    if (!Object.hasOwn(out, key)) {
      out[key] = rawKey.endsWith('[]') || Array.isArray(value) ? [...values] : value;
      continue;
    }
    const prev = out[key];
    out[key] = [...(Array.isArray(prev) ? prev : [prev]), ...values];
  }
  return out;
}
