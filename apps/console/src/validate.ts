// Form validation with the API's own zod contracts: the first problem of each field, keyed the way
// the API names it in `param` (e.g. `limits.key.requests_per_minute`).
import { paramFromPath } from '@infer/contracts';
import type { z } from 'zod';

export type FieldErrors = Record<string, string>;

export function fieldErrors(schema: z.ZodType, value: unknown): FieldErrors {
  const r = schema.safeParse(value);
  if (r.success) return {};
  const out: FieldErrors = {};
  for (const issue of r.error.issues) {
    const key = paramFromPath(issue.path) ?? '_form';
    out[key] ??= issue.message;
  }
  return out;
}

/** Values of a form as strings, with empty ones dropped (so optional fields are absent). */
export function compact<T extends Record<string, unknown>>(values: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(values))
    if (v !== '' && v !== undefined && v !== null) (out as Record<string, unknown>)[k] = v;
  return out;
}
