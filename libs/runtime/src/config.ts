import { z } from 'zod';

/**
 * Parses the environment with a schema once at start-up. On failure it throws a ConfigError that
 * lists every bad variable, so the process can refuse to start with a clear message.
 */
export class ConfigError extends Error {
  constructor(app: string, issues: string[]) {
    super(`${app}: invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function parseConfig<S extends z.ZodType>(
  app: string,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const r = schema.safeParse(env);
  if (r.success) return r.data;
  throw new ConfigError(
    app,
    r.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`),
  );
}

/** Env helpers: booleans written as 1/0/true/false, numbers as strings. */
export const envBool = (def: boolean) =>
  z
    .enum(['1', '0', 'true', 'false', 'yes', 'no', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? def : v === '1' || v === 'true' || v === 'yes'));
export const envInt = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
/** A comma-separated list (blanks trimmed, empty items dropped); `def` when unset. */
export const envList = (def = '') =>
  z
    .string()
    .default(def)
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    );

export const NatsUrlSchema = z
  .string()
  .default('nats://127.0.0.1:4222')
  .describe('NATS server URL (JetStream enabled).');
