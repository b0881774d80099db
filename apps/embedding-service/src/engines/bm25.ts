import { z } from 'zod';
import { countTokens, terms } from '../tokens.js';
import {
  type RankResult,
  type RerankEngine,
  type RerankEngineInfo,
  throwIfAborted,
  yieldToEventLoop,
} from './engine.js';
import { DEFAULT_MAX_INPUT_TOKENS } from './lexical-hash.js';
import type { EngineFactory } from './registry.js';
import { contextLimit, parseSettings } from './settings.js';

/**
 * `bm25`: Okapi BM25 lexical ranking, the embedded rerank default for machines without model weights.
 * Not a neural cross-encoder: a document ranks high when it contains the query's rarer words often,
 * relative to its length. Deterministic.
 *
 * The corpus is the request's own documents: for each distinct word w of the query (tokens.ts `terms`:
 * NFKC, lower case, camelCase identifiers also split into their parts; symbols are ignored),
 *   idf(w) = ln(1 + (N - n(w) + 0.5) / (n(w) + 0.5))            N documents, n(w) of them contain w
 *   s(d)   = sum_w idf(w) * tf(w,d) * (k1 + 1) / (tf(w,d) + k1 * (1 - b + b * |d| / avgdl))
 * with k1 = 1.2 and b = 0.75 by default (`k1`, `b`).
 *
 * Scores are mapped into [0, 1] with relevance = s / (s + k) (`score_k`, default 1): 0 for a document
 * sharing no word with the query, 0.5 at s = k, approaching 1 as s grows; the map is monotonic, so the
 * order is BM25's. The value is comparable between documents of one request, not across requests.
 *
 * Tokens (meta.billed_units): the service's approximation (tokens.ts) of the query plus every
 * document, read once each. The query may have at most the catalog `context_window` tokens (8192 when
 * it has none); documents have no limit.
 */
const Settings = z.object({
  type: z.literal('bm25'),
  k1: z.number().min(0).max(10).default(1.2),
  b: z.number().min(0).max(1).default(0.75),
  score_k: z.number().positive().default(1),
  split_identifiers: z.boolean().default(true),
  max_concurrent: z.number().int().min(1).max(64).default(2),
});
type Bm25Settings = z.infer<typeof Settings>;

export const bm25Factory: EngineFactory<RerankEngine> = {
  type: 'bm25',
  create(settings, ctx) {
    const s = parseSettings(Settings, settings, ctx);
    return new Bm25Engine(s, contextLimit(ctx.model, DEFAULT_MAX_INPUT_TOKENS));
  },
};

export class Bm25Engine implements RerankEngine {
  readonly type = 'bm25';

  constructor(
    private readonly s: Omit<Bm25Settings, 'type'>,
    private readonly maxQueryTokens: number,
  ) {}

  async ready(): Promise<RerankEngineInfo> {
    return { maxQueryTokens: this.maxQueryTokens, maxConcurrent: this.s.max_concurrent };
  }

  countQueryTokens(query: string): number {
    return countTokens(query);
  }

  async rank(query: string, documents: readonly string[], signal: AbortSignal): Promise<RankResult> {
    const opts = { splitIdentifiers: this.s.split_identifiers };
    const words = (text: string) =>
      terms(text, opts)
        .filter((t) => t.kind === 'word')
        .map((t) => t.text);
    const queryWords = [...new Set(words(query))];
    let tokens = countTokens(query);
    const docs: Array<{ tf: Map<string, number>; len: number }> = [];
    const df = new Map<string, number>();
    let slice = performance.now();
    for (const d of documents) {
      if (performance.now() - slice > 8) {
        await yieldToEventLoop();
        slice = performance.now();
      }
      throwIfAborted(signal);
      tokens += countTokens(d);
      const ws = words(d);
      const tf = new Map<string, number>();
      for (const w of ws) tf.set(w, (tf.get(w) ?? 0) + 1);
      for (const w of tf.keys()) df.set(w, (df.get(w) ?? 0) + 1);
      docs.push({ tf, len: ws.length });
    }
    const n = docs.length;
    const avgdl = docs.reduce((a, d) => a + d.len, 0) / Math.max(1, n) || 1;
    const idf = new Map(
      queryWords.map((w) => {
        const nw = df.get(w) ?? 0;
        return [w, Math.log(1 + (n - nw + 0.5) / (nw + 0.5))] as const;
      }),
    );
    const { k1, b, score_k } = this.s;
    const scores = docs.map((d) => {
      let s = 0;
      for (const w of queryWords) {
        const f = d.tf.get(w);
        if (!f) continue;
        s += ((idf.get(w) as number) * f * (k1 + 1)) / (f + k1 * (1 - b + (b * d.len) / avgdl));
      }
      return s / (s + score_k);
    });
    return { scores, tokens };
  }
}
