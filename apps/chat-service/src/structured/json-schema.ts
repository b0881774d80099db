import { Ajv, type ValidateFunction } from 'ajv';

/**
 * JSON Schema validation for structured output (`response_format: json_schema`) and tool arguments,
 * with Ajv (draft-07 keywords, `$defs`/`definitions` references; unknown keywords are ignored, formats
 * date, time, date-time, uuid and email are checked, other formats are not). Compiled validators are
 * cached by the schema's JSON.
 */
const ajv = new Ajv({
  strict: false,
  allErrors: false,
  validateFormats: true,
  logger: false,
  formats: {
    date: /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/,
    time: /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)?$/,
    'date-time':
      /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/,
    uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
    email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  },
});

const CACHE_MAX = 256;
const cache = new Map<string, ValidateFunction>();

/** A schema without its `$schema` marker (draft URIs Ajv does not bundle would fail to compile). */
function clean(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}

/**
 * The compiled validator of `schema`; throws an Error with Ajv's reason when the schema itself is
 * invalid (callers turn it into a 400 naming the field that holds the schema).
 */
export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const fn = ajv.compile(clean(schema));
  cache.set(key, fn);
  if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
  return fn;
}

/** Null when `schema` compiles, else the reason it does not. */
export function schemaProblem(schema: Record<string, unknown>): string | null {
  try {
    compileSchema(schema);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

export type JsonCheck = { ok: true; value: unknown } | { ok: false; reason: string };

/** Parses `text` as JSON and validates it against `schema` (any JSON object when schema is null). */
export function checkJson(text: string, schema: Record<string, unknown> | null): JsonCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not valid JSON' };
  }
  if (!schema) {
    return value && typeof value === 'object' && !Array.isArray(value)
      ? { ok: true, value }
      : { ok: false, reason: 'not a JSON object' };
  }
  const validate = compileSchema(schema);
  if (validate(value)) return { ok: true, value };
  const err = validate.errors?.[0];
  return {
    ok: false,
    reason: `${err?.instancePath || '(root)'} ${err?.message ?? 'does not match the schema'}`,
  };
}
