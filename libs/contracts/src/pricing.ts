import { z } from 'zod';

/**
 * Money, exactly (docs/adr/0101-money.md). Every amount the platform stores, sums, reserves or compares
 * is an integer count of NANO-DOLLARS (1e-9 of the currency unit, `usd`): the ledger's `cost`, the
 * rollups, the budget counters in Redis and the budgets themselves. Integers add without drift in
 * PostgreSQL (bigint), in Redis (INCRBY) and in JavaScript (exact below 2^53 nano-dollars, about
 * 9 million dollars per sum; report totals are summed as bigint). Prices and budgets are written and
 * shown as decimal strings of dollars (`"0.15"`, `"12.5"`), never as binary floats.
 */
export const NANOS_PER_UNIT = 1_000_000_000;
export const CURRENCY = 'usd';

/** Digits after the point a price or budget may have (a nano-dollar). */
const SCALE = 9;
const DECIMAL = /^(\d{1,12})(?:\.(\d{1,9}))?$/;

/** A decimal amount of dollars (a string, or a JSON/YAML number) -> nano-dollars; null if not one. */
export function parseMoney(v: unknown): number | null {
  let s: string;
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) return null;
    // A YAML/JSON number: its shortest decimal form (0.15 -> "0.15"), never its binary value.
    s = String(v);
    if (/e/i.test(s)) s = v.toFixed(SCALE);
  } else if (typeof v === 'string') s = v.trim();
  else return null;
  const m = DECIMAL.exec(s);
  if (!m) return null;
  const frac = (m[2] ?? '').padEnd(SCALE, '0');
  const n = Number(m[1]) * NANOS_PER_UNIT + Number(frac);
  return Number.isSafeInteger(n) ? n : null;
}

/** Nano-dollars -> the decimal string of dollars (`1500` -> `"0.0000015"`, `2e9` -> `"2"`). */
export function formatMoney(nanos: number | bigint): string {
  const n = BigInt(nanos);
  const neg = n < 0n;
  const a = neg ? -n : n;
  const whole = a / 1_000_000_000n;
  const frac = (a % 1_000_000_000n).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/**
 * A price or budget as the catalog, limits and admin API take it: a decimal amount of dollars, kept as
 * given (read with parseMoney wherever it is used).
 */
export const MoneySchema = z
  .union([z.string(), z.number()])
  .refine((v) => parseMoney(v) !== null, {
    message: 'a non-negative amount of dollars with at most 9 decimals, e.g. "0.15"',
  })
  .meta({
    description:
      'A decimal amount in dollars (a string such as "0.15"; a number is read as its decimal form).',
  });

/**
 * A model's prices (catalog `pricing`), in dollars: per million input (prompt) and output (completion)
 * tokens, and where that is the unit, per image, per search and per audio minute. A batch line costs its
 * interactive price times the model's `batch_price_factor`. Absent prices are 0.
 */
export const PricingSchema = z
  .object({
    input_per_million: MoneySchema.optional(),
    output_per_million: MoneySchema.optional(),
    /** Image models: each image produced (`n`). */
    per_image: MoneySchema.optional(),
    /** Web search: each search (POST /v1/search, the MCP tool). */
    per_search: MoneySchema.optional(),
    /** Transcription: each minute of audio (billed by the second). */
    per_audio_minute: MoneySchema.optional(),
  })
  .meta({ id: 'Pricing' });
export type Pricing = z.infer<typeof PricingSchema>;

/** A model's prices as integers, computed once per catalog entry (the hot path only multiplies). */
export interface PriceTable {
  /** Nano-dollars per million tokens, in and out. */
  inPerM: number;
  outPerM: number;
  /** Nano-dollars per unit. */
  image: number;
  search: number;
  audioMinute: number;
  batchFactor: number;
  /** Any price at all (a free model costs nothing and needs no budget check). */
  priced: boolean;
}

const tables = new WeakMap<object, PriceTable>();

/** The integer prices of a catalog entry (cached per entry object). */
export function priceTable(entry: {
  pricing?: Pricing | null | undefined;
  batch_price_factor?: number;
}): PriceTable {
  let t = tables.get(entry);
  if (t) return t;
  const p = entry.pricing ?? {};
  const n = (v: string | number | undefined) => (v === undefined ? 0 : (parseMoney(v) ?? 0));
  t = {
    inPerM: n(p.input_per_million),
    outPerM: n(p.output_per_million),
    image: n(p.per_image),
    search: n(p.per_search),
    audioMinute: n(p.per_audio_minute),
    batchFactor: entry.batch_price_factor ?? 0.5,
    priced: false,
  };
  t.priced = t.inPerM + t.outPerM + t.image + t.search + t.audioMinute > 0;
  tables.set(entry, t);
  return t;
}

/** What a request used, as cost sees it. */
export interface CostInput {
  kind: string;
  promptTokens: number;
  completionTokens: number;
  /** Images produced (image models; `n` of a successful request). */
  images?: number;
  batch?: boolean;
  /** The request failed (status >= 400): only the tokens it used are billed, no image or search. */
  failed?: boolean;
}

/** Tokens at a price per million, in nano-dollars, rounded half up (exact: integers below 2^53). */
function perMillion(tokens: number, nanosPerM: number): number {
  if (!tokens || !nanosPerM) return 0;
  const p = tokens * nanosPerM;
  if (Number.isSafeInteger(p)) return Math.floor((p + 500_000) / 1_000_000);
  return Number((BigInt(tokens) * BigInt(nanosPerM) + 500_000n) / 1_000_000n);
}

/**
 * The cost of one request in nano-dollars at a model's prices: tokens at the per-million prices (a
 * transcription's prompt "tokens" are its audio seconds, billed per minute when the model has that
 * price), images and searches per unit; a batch line at the batch factor.
 */
export function costOf(t: PriceTable, u: CostInput): number {
  if (!t.priced) return 0;
  let c = 0;
  if (u.kind === 'stt' && t.audioMinute) c = Math.round((u.promptTokens * t.audioMinute) / 60);
  else c = perMillion(u.promptTokens, t.inPerM) + perMillion(u.completionTokens, t.outPerM);
  if (!u.failed) {
    if (u.kind === 'image') c += (u.images ?? 1) * t.image;
    if (u.kind === 'search') c += t.search;
  }
  if (u.batch && c) c = Math.round(c * t.batchFactor);
  return c;
}
