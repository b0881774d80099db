import { z } from 'zod';
import { countTokens } from '../tokens.js';
import { Bm25Engine } from './bm25.js';
import {
  type RankResult,
  type RerankEngine,
  type RerankEngineInfo,
  throwIfAborted,
  yieldToEventLoop,
} from './engine.js';
import type { SifEmbedder } from './glove/sif.js';
import { sifEmbedder } from './glove-sif.js';
import { DEFAULT_MAX_INPUT_TOKENS } from './lexical-hash.js';
import { type EngineFactory, lazy } from './registry.js';
import { contextLimit, parseSettings } from './settings.js';

/**
 * `hybrid`: the embedded rerank default. A weighted sum of a lexical and a semantic score, both in [0, 1]:
 *
 *   relevance = w_bm25 * bm25 + w_semantic * (1 + cos) / 2
 *
 * - bm25: Okapi BM25 over the request's documents, mapped as s / (s + score_k) (bm25.ts, same settings
 *   `k1`, `b`, `score_k`, `split_identifiers`);
 * - semantic: the cosine of the GloVe-SIF sentence vectors (glove/sif.ts, the embedding default's
 *   method and settings) of the query and the document; for a document longer than `passage_words`
 *   (default 60) words, the mean of that and the best cosine over its passages of `passage_words` words
 *   (overlapping by half), so that the one paragraph that answers is not averaged away; mapped from
 *   [-1, 1] to [0, 1] (clamping negatives to 0 would erase the order among unrelated-looking documents);
 * - weights (`weights`, default bm25 0.6, semantic 0.4, normalised to sum 1): chosen on the retrieval
 *   benchmark (bench/retrieval.ts; figures and the other mixes tried in apps/embedding-service/README.md).
 *
 * `hybridScores` (the mix) is shared with the search service's local index.
 * Tokens: the approximation of the query plus every document, as bm25.
 */
export const HYBRID_DEFAULT_WEIGHTS = { bm25: 0.6, semantic: 0.4 } as const;

const Settings = z.object({
  type: z.literal('hybrid'),
  weights: z
    .object({
      bm25: z.number().min(0).default(HYBRID_DEFAULT_WEIGHTS.bm25),
      semantic: z.number().min(0).default(HYBRID_DEFAULT_WEIGHTS.semantic),
    })
    .refine((w) => w.bm25 + w.semantic > 0, 'at least one weight must be positive')
    .prefault({}),
  k1: z.number().min(0).max(10).default(1.2),
  b: z.number().min(0).max(1).default(0.75),
  score_k: z.number().positive().default(1),
  split_identifiers: z.boolean().default(true),
  max_concurrent: z.number().int().min(1).max(64).default(2),
  passage_words: z.number().int().min(0).max(10_000).default(60),
  vocab_size: z.number().int().min(1_000).max(1_000_000).default(200_000),
  sif_a: z.number().positive().max(1).default(1e-3),
  remove_common_component: z.boolean().default(true),
  seed: z.number().int().min(0).max(0xffffffff).default(0),
  source: z.string().min(1).optional(),
  cache_dir: z.string().min(1).optional(),
});
type Parsed = z.infer<typeof Settings>;

export const hybridFactory: EngineFactory<RerankEngine> = {
  type: 'hybrid',
  create(settings, ctx) {
    const s = parseSettings(Settings, settings, ctx);
    return new HybridEngine(s, contextLimit(ctx.model, DEFAULT_MAX_INPUT_TOKENS));
  },
};

/** The weighted mix of two score lists in [0, 1]; weights are normalised to sum 1. */
export function hybridScores(
  bm25: readonly number[],
  semantic: readonly number[],
  weights: { bm25: number; semantic: number } = HYBRID_DEFAULT_WEIGHTS,
): number[] {
  const total = weights.bm25 + weights.semantic;
  const wl = weights.bm25 / total;
  const ws = weights.semantic / total;
  return bm25.map((b, i) => {
    const s = Math.max(0, Math.min(1, (1 + (semantic[i] ?? 0)) / 2));
    const v = wl * b + ws * s;
    return Number.isFinite(v) ? Math.max(0, Math.min(1, v)) : 0;
  });
}

export class HybridEngine implements RerankEngine {
  readonly type = 'hybrid';
  private readonly bm25: Bm25Engine;
  private readonly model = lazy<SifEmbedder>(() => sifEmbedder(this.s, 128));

  constructor(
    private readonly s: Parsed,
    private readonly maxQueryTokens: number,
  ) {
    this.bm25 = new Bm25Engine(s, maxQueryTokens);
  }

  async ready(): Promise<RerankEngineInfo> {
    await this.model.get();
    return { maxQueryTokens: this.maxQueryTokens, maxConcurrent: this.s.max_concurrent };
  }

  countQueryTokens(query: string): number {
    return countTokens(query);
  }

  async rank(query: string, documents: readonly string[], signal: AbortSignal): Promise<RankResult> {
    const lexical = await this.bm25.rank(query, documents, signal);
    const e = await this.model.get();
    // Cosines are computed in the 100-dimension word space (the projection keeps them exactly).
    const q = e.sentence(query);
    const semantic: number[] = [];
    let slice = performance.now();
    for (const d of documents) {
      if (performance.now() - slice > 8) {
        await yieldToEventLoop();
        slice = performance.now();
      }
      throwIfAborted(signal);
      semantic.push(passageSimilarity(e, q, d, this.s.passage_words));
    }
    return {
      scores: hybridScores(lexical.scores, semantic, this.s.weights),
      tokens: lexical.tokens,
    };
  }
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let j = 0; j < a.length; j++) s += (a[j] as number) * (b[j] as number);
  return s;
}

/**
 * Cosine of the query with the document; with `passageWords` > 0, the mean of that and the best cosine
 * over passages of `passageWords` words (overlapping by half), so that a long document whose one
 * paragraph answers the query is not averaged away.
 */
export function passageSimilarity(
  e: SifEmbedder,
  q: Float64Array,
  doc: string,
  passageWords: number,
): number {
  const whole = dot(q, e.sentence(doc));
  if (passageWords <= 0) return whole;
  const words = doc.split(/\s+/).filter(Boolean);
  if (words.length <= passageWords) return whole;
  let best = -1;
  const step = Math.max(1, passageWords >> 1);
  for (let at = 0; at < words.length; at += step) {
    best = Math.max(best, dot(q, e.sentence(words.slice(at, at + passageWords).join(' '))));
    if (at + passageWords >= words.length) break;
  }
  return (whole + best) / 2;
}
