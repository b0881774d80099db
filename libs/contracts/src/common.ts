import { z } from 'zod';

export const ModelIdSchema = z.string().min(1, 'model must not be empty');
export const TemperatureSchema = z.number().min(0).max(2);
export const TopPSchema = z.number().min(0).max(1);
export const MaxTokensSchema = z.number().int().min(1);

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
  })
  .meta({ id: 'Model' });
export type Model = z.infer<typeof ModelSchema>;

export const ModelListSchema = z
  .object({ object: z.literal('list'), data: z.array(ModelSchema) })
  .meta({ id: 'ModelList' });
export type ModelList = z.infer<typeof ModelListSchema>;
