import { z } from 'zod';
import { countTokens, terms } from '../tokens.js';
import { decodeCl100k } from './cl100k.js';
import {
  type EmbeddingEngine,
  type EmbeddingEngineInfo,
  type EmbedResult,
  throwIfAborted,
  yieldToEventLoop,
} from './engine.js';
import type { EngineFactory } from './registry.js';
import { batchSchema, contextLimit, EngineConfigError, parseSettings } from './settings.js';

/**
 * `lexical-hash`: a HASHED LEXICAL EMBEDDING, the embedded default for machines without model weights.
 * It is not a neural model and knows no synonyms: texts that share words, word pairs and spellings get
 * high cosine similarity, unrelated texts get about 0. Deterministic (same text, same settings, same
 * vector on any machine) and fast (tens of microseconds per sentence).
 *
 * Features of a text (after NFKC and lower case, see tokens.ts `terms`):
 *   - words: each word and symbol;
 *   - bigrams: each pair of neighbouring terms (word order matters a little);
 *   - chars: character n-grams (`char_ngrams`, default 3..5) of each word padded as `<word>`, so that
 *     inflections and typos stay close (`embedding` ~ `embeddings`); a word shorter than the smallest n
 *     is one gram.
 * Each feature is hashed (FNV-1a 32-bit + murmur3 finaliser, mixed with `seed`) to one of the catalog's
 * `dimensions` slots with a sign from a second hash (signed feature hashing, so collisions cancel out on
 * average instead of piling up); its weight is sublinear in its count, 1 + ln(tf). Each of the three
 * groups is scaled to unit length times its weight (`weights`), the groups are summed and the vector is
 * L2-normalised. A text with no feature (only whitespace) gets the zero vector.
 *
 * Tokens (usage and the per-input limit): the service's approximation (tokens.ts `countTokens`); the
 * limit is the catalog `context_window`, 8192 when it has none.
 */
const Settings = z.object({
  type: z.literal('lexical-hash'),
  char_ngrams: z
    .tuple([z.number().int().min(1).max(16), z.number().int().min(1).max(16)])
    .refine(([a, b]) => a <= b, 'the smallest n must not exceed the largest')
    .default([3, 5]),
  weights: z
    .object({
      words: z.number().min(0).default(1),
      bigrams: z.number().min(0).default(0.5),
      chars: z.number().min(0).default(1),
    })
    .prefault({}),
  seed: z.number().int().min(0).max(0xffffffff).default(0),
  batch: batchSchema({ max_items: 256, max_tokens: 131_072, max_wait_ms: 1, max_concurrent: 1 }),
});
type LexicalHashSettings = z.infer<typeof Settings>;

export const DEFAULT_MAX_INPUT_TOKENS = 8192;

export const lexicalHashFactory: EngineFactory<EmbeddingEngine> = {
  type: 'lexical-hash',
  create(settings, ctx) {
    const s = parseSettings(Settings, settings, ctx);
    const dims = ctx.model.dimensions;
    if (!dims)
      throw new EngineConfigError(ctx.model.id, 'lexical-hash needs the catalog `dimensions` of the model');
    return new LexicalHashEngine(s, {
      dimensions: dims,
      maxInputTokens: contextLimit(ctx.model, DEFAULT_MAX_INPUT_TOKENS),
      batch: s.batch,
    });
  },
};

export class LexicalHashEngine implements EmbeddingEngine {
  readonly type = 'lexical-hash';

  constructor(
    private readonly s: Omit<LexicalHashSettings, 'type' | 'batch'>,
    private readonly info: EmbeddingEngineInfo,
  ) {}

  async ready(): Promise<EmbeddingEngineInfo> {
    return this.info;
  }

  countTokens(texts: readonly string[]): number[] {
    return texts.map(countTokens);
  }

  /** Token ids: in cl100k_base (see decodeCl100k), embedded as the text they spell. */
  detokenize(ids: readonly number[]): string {
    return decodeCl100k(ids);
  }

  async embed(texts: readonly string[], signal: AbortSignal): Promise<EmbedResult> {
    const vectors: Float32Array[] = [];
    let slice = performance.now();
    for (const text of texts) {
      // Long batches share the event loop: yield every few milliseconds and honour cancellation.
      if (performance.now() - slice > 8) {
        await yieldToEventLoop();
        slice = performance.now();
      }
      throwIfAborted(signal);
      vectors.push(this.vector(text));
    }
    return { vectors };
  }

  /** The vector of one text. */
  vector(text: string): Float32Array {
    const dims = this.info.dimensions;
    const acc = new Float64Array(dims);
    const ts = terms(text);
    const words = new Map<string, number>();
    const bigrams = new Map<string, number>();
    const chars = new Map<string, number>();
    const [minN, maxN] = this.s.char_ngrams;
    for (let i = 0; i < ts.length; i++) {
      const t = ts[i] as (typeof ts)[number];
      bump(words, `${t.kind === 'word' ? 'w' : 's'}\u0001${t.text}`);
      if (i > 0) bump(bigrams, `b\u0001${(ts[i - 1] as (typeof ts)[number]).text}\u0001${t.text}`);
      if (t.kind !== 'word') continue;
      const padded = `<${t.text}>`;
      const cps = [...padded];
      if (cps.length < minN) {
        bump(chars, `c\u0001${padded}`);
        continue;
      }
      for (let n = minN; n <= maxN && n <= cps.length; n++) {
        for (let k = 0; k + n <= cps.length; k++) bump(chars, `c\u0001${cps.slice(k, k + n).join('')}`);
      }
    }
    this.addGroup(acc, words, this.s.weights.words);
    this.addGroup(acc, bigrams, this.s.weights.bigrams);
    this.addGroup(acc, chars, this.s.weights.chars);
    let norm = 0;
    for (let i = 0; i < dims; i++) norm += (acc[i] as number) ** 2;
    const out = new Float32Array(dims);
    if (norm === 0) return out;
    const inv = 1 / Math.sqrt(norm);
    for (let i = 0; i < dims; i++) out[i] = (acc[i] as number) * inv;
    return out;
  }

  /** Adds one feature group, scaled to length `weight` (collisions aside), with signed hashing. */
  private addGroup(acc: Float64Array, counts: Map<string, number>, weight: number): void {
    if (weight === 0 || counts.size === 0) return;
    let sq = 0;
    for (const tf of counts.values()) sq += (1 + Math.log(tf)) ** 2;
    const scale = weight / Math.sqrt(sq);
    const dims = acc.length;
    for (const [feature, tf] of counts) {
      const h = hash32(feature, this.s.seed);
      const slot = h % dims;
      const sign = fmix32(h ^ 0x9e3779b9) & 1 ? -1 : 1;
      acc[slot] = (acc[slot] as number) + sign * (1 + Math.log(tf)) * scale;
    }
  }
}

function bump(m: Map<string, number>, k: string): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

/** FNV-1a over UTF-16 code units, seeded, then the murmur3 finaliser for a good spread of low bits. */
export function hash32(s: string, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

function fmix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
