import { readFileSync } from 'node:fs';
import { type LimitsFile, LimitsFileSchema } from '@infer/contracts';
import { ConfigError } from '@infer/runtime';
import { parse } from 'yaml';

/**
 * Reads and validates the limits file (YAML or JSON: YAML is a superset). Called once at start-up; a
 * missing or invalid file stops the gateway with a message naming each bad field.
 */
export function loadLimitsFile(path: string | undefined): LimitsFile {
  if (!path) return {};
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ConfigError('gateway', [`LIMITS_FILE: cannot read ${path}: ${(e as Error).message}`]);
  }
  const r = LimitsFileSchema.safeParse(raw ?? {});
  if (!r.success) {
    throw new ConfigError(
      'gateway',
      r.error.issues.map((i) => `LIMITS_FILE ${path}: ${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  return r.data;
}
