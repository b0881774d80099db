import { ApiError, type CatalogEntry } from '@infer/contracts';
import type { EngineContext } from '@infer/runtime';
import { z } from 'zod';

/**
 * Dynamic batching of one embedding model (catalog `engine.batch`; defaults depend on the engine):
 * concurrent requests are merged into calls of the engine of at most `max_items` texts and
 * `max_tokens` tokens; the first text of a batch waits at most `max_wait_ms` for company while an
 * engine slot is free; `max_concurrent` engine calls run at once (while all are busy, texts queue up and
 * the next batch takes as many as fit). `enabled: false` sends each request on its own (still split by
 * the size budget).
 */
export const BatchSettingsSchema = z.object({
  enabled: z.boolean().default(true),
  max_items: z.number().int().min(1).max(65_536).default(64),
  max_tokens: z.number().int().min(1).default(32_768),
  max_wait_ms: z.number().min(0).max(1_000).default(2),
  max_concurrent: z.number().int().min(1).max(256).default(1),
});
export type BatchSettings = z.infer<typeof BatchSettingsSchema>;

/** `batch` with engine-specific defaults under the operator's values. */
export function batchSchema(defaults: Partial<BatchSettings>) {
  return z
    .object({
      enabled: z.boolean().optional(),
      max_items: z.number().int().min(1).max(65_536).optional(),
      max_tokens: z.number().int().min(1).optional(),
      max_wait_ms: z.number().min(0).max(1_000).optional(),
      max_concurrent: z.number().int().min(1).max(256).optional(),
    })
    .optional()
    .transform((b) => BatchSettingsSchema.parse({ ...defaults, ...stripUndefined(b ?? {}) }));
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** What a factory gets besides the settings. */
export type { EngineContext } from '@infer/runtime';

/**
 * Raised for a model whose catalog configuration cannot work (bad settings, missing weights). The
 * details go to the service log; the client gets a 500 that names the model but no internals.
 */
export class EngineConfigError extends ApiError {
  constructor(
    model: string,
    readonly detail: string,
  ) {
    super(500, `The model '${model}' cannot be served: its engine is misconfigured on the server.`, {
      type: 'server_error',
    });
    this.name = 'EngineConfigError';
  }
}

/** Validates engine settings with `schema`; a failure is an EngineConfigError listing every problem. */
export function parseSettings<S extends z.ZodType>(
  schema: S,
  settings: unknown,
  ctx: EngineContext,
): z.output<S> {
  const r = schema.safeParse(settings);
  if (r.success) return r.data;
  const detail = r.error.issues.map((i) => `${i.path.join('.') || '(engine)'}: ${i.message}`).join('; ');
  throw new EngineConfigError(ctx.model.id, `invalid engine settings: ${detail}`);
}

/** The per-input token limit of a model: its catalog `context_window`, else the engine's default. */
export function contextLimit(model: CatalogEntry, fallback: number): number {
  return model.context_window ?? fallback;
}
