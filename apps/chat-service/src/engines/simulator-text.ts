import { createHash } from 'node:crypto';

/**
 * Deterministic text for the simulator engine (a test double): a seeded PRNG over a fixed word list,
 * and JSON values sampled from a JSON Schema (tool arguments, structured output).
 */

/** mulberry32: a small, fast, good-enough 32-bit PRNG. Same seed, same sequence, on every platform. */
export class Prng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
  hex(chars: number): string {
    let s = '';
    while (s.length < chars) s += this.int(16).toString(16);
    return s;
  }
}

/** A 32-bit seed from any JSON-able values (SHA-256 of their JSON, first 4 bytes). */
export function seedFrom(...parts: unknown[]): number {
  return createHash('sha256').update(JSON.stringify(parts)).digest().readUInt32BE(0);
}

/** Lower-case words of at most 8 letters, so that each word is exactly one token (see src/tokens.ts). */
export const WORDS: readonly string[] = [
  'the',
  'model',
  'answer',
  'request',
  'token',
  'stream',
  'signal',
  'engine',
  'server',
  'client',
  'quick',
  'brown',
  'fox',
  'jumps',
  'over',
  'lazy',
  'dog',
  'river',
  'stone',
  'garden',
  'light',
  'shadow',
  'window',
  'number',
  'simple',
  'careful',
  'result',
  'value',
  'question',
  'reason',
  'because',
  'and',
  'but',
  'with',
  'from',
  'into',
  'under',
  'between',
  'every',
  'some',
  'many',
  'few',
  'small',
  'large',
  'early',
  'late',
  'bright',
  'quiet',
  'steady',
  'gentle',
  'build',
  'measure',
  'follow',
  'explain',
  'consider',
  'return',
  'compute',
  'observe',
  'predict',
  'test',
  'data',
  'context',
  'memory',
  'latency',
  'cluster',
  'queue',
  'limit',
  'budget',
  'channel',
  'batch',
  'is',
  'was',
  'will',
  'can',
  'may',
  'should',
  'often',
  'always',
  'never',
  'then',
  'this',
  'that',
  'these',
  'those',
  'here',
  'there',
  'we',
  'they',
  'it',
  'you',
];

function capitalize(w: string): string {
  return w.charAt(0).toUpperCase() + w.slice(1);
}

/**
 * Endless prose, one token per item: `Word`, ` word`, `,`, `.` ... (the first item has no leading
 * space). Sentences of 4 to 13 words, an occasional comma.
 */
export function* prose(rng: Prng): Generator<string, never> {
  let first = true;
  while (true) {
    const len = 4 + rng.int(10);
    for (let w = 0; w < len; w++) {
      const word = w === 0 ? capitalize(rng.pick(WORDS)) : rng.pick(WORDS);
      yield first ? word : ` ${word}`;
      first = false;
      if (w > 0 && w < len - 1 && rng.next() < 0.08) yield ',';
    }
    yield '.';
  }
}

/** `count` words of prose as one string, without punctuation. */
export function words(rng: Prng, count: number): string {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(rng.pick(WORDS));
  return out.join(' ');
}

type Schema = Record<string, unknown>;
const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const MAX_DEPTH = 6;

/**
 * A value that satisfies common JSON Schema keywords: const, enum, type (first non-null of a list),
 * anyOf/oneOf/allOf (first branch), object properties (the `required` ones, or all when none are
 * listed), array items with minItems/maxItems, string formats date-time/date/email/uri/uuid and
 * lengths, number and integer bounds, boolean, null. `$ref` and pattern are not resolved.
 */
export function sampleJson(schema: unknown, rng: Prng, depth = 0): unknown {
  if (!isObj(schema)) return words(rng, 2);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return rng.pick(schema.enum);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) {
    const branches = schema[k];
    if (Array.isArray(branches) && branches.length) {
      const nonNull = branches.find((b) => !(isObj(b) && b.type === 'null'));
      return sampleJson(nonNull ?? branches[0], rng, depth + 1);
    }
  }
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? type[0];
  if (type === undefined) type = isObj(schema.properties) ? 'object' : schema.items ? 'array' : 'string';
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      if (depth >= MAX_DEPTH) return out;
      const props = isObj(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required)
        ? schema.required.filter((k) => typeof k === 'string')
        : [];
      const keys = required.length ? required : Object.keys(props);
      for (const k of keys) out[k] = sampleJson(props[k], rng, depth + 1);
      return out;
    }
    case 'array': {
      if (depth >= MAX_DEPTH) return [];
      const min = num(schema.minItems) ?? 1;
      const max = Math.max(min, Math.min(num(schema.maxItems) ?? 3, 3));
      const count = min + rng.int(max - min + 1);
      return Array.from({ length: count }, () => sampleJson(schema.items, rng, depth + 1));
    }
    case 'integer':
    case 'number': {
      const lo = num(schema.minimum) ?? (num(schema.exclusiveMinimum) ?? -1) + 1;
      const hi = num(schema.maximum) ?? (num(schema.exclusiveMaximum) ?? lo + 101) - 1;
      const span = Math.max(0, hi - lo);
      if (type === 'integer') return Math.ceil(lo) + rng.int(Math.floor(span) + 1);
      return Math.round((lo + rng.next() * span) * 100) / 100;
    }
    case 'boolean':
      return rng.next() < 0.5;
    case 'null':
      return null;
    default:
      return sampleString(schema, rng);
  }
}

function sampleString(schema: Schema, rng: Prng): string {
  switch (schema.format) {
    case 'date-time':
      return `2026-01-${String(1 + rng.int(28)).padStart(2, '0')}T12:00:00Z`;
    case 'date':
      return `2026-01-${String(1 + rng.int(28)).padStart(2, '0')}`;
    case 'email':
      return `${rng.pick(WORDS)}@example.com`;
    case 'uri':
    case 'url':
      return `https://example.com/${rng.pick(WORDS)}`;
    case 'uuid': {
      const h = rng.hex(32);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
    }
  }
  let s = words(rng, 1 + rng.int(3));
  const min = num(schema.minLength) ?? 0;
  while (s.length < min) s += ` ${rng.pick(WORDS)}`;
  const max = num(schema.maxLength);
  return max !== undefined ? s.slice(0, max) : s;
}
