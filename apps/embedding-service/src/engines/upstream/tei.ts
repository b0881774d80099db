import { z } from 'zod';
import { countTokens } from '../../tokens.js';
import type {
  EmbeddingEngine,
  EmbeddingEngineInfo,
  EmbedResult,
  RankResult,
  RerankEngine,
  RerankEngineInfo,
} from '../engine.js';
import { throwIfAborted } from '../engine.js';
import type { EngineFactory } from '../registry.js';
import { batchSchema, EngineConfigError, type EngineContext, parseSettings } from '../settings.js';
import {
  expectShape,
  postJson,
  UpstreamCommon,
  type UpstreamTarget,
  upstreamFailed,
  upstreamTarget,
} from './http.js';

/**
 * `tei`: Hugging Face Text Embeddings Inference on its native routes.
 *
 * Embeddings: `POST {base_url}/embed` `{inputs: [texts], normalize, truncate}` -> `[[numbers]]`. Batches
 * hold at most 32 texts by default (TEI's own `--max-client-batch-size` default; raise both together).
 * The vectors must have the catalog `dimensions` (required for this engine).
 *
 * Rerank: `POST {base_url}/rerank` `{query, texts, raw_scores: false, return_text: false, truncate}` ->
 * `[{index, score}]`; TEI's scores are the sigmoid of the cross-encoder's logit, in [0, 1] (clamped to it
 * in case). Documents go in calls of at most `max_documents_per_call` (32 by default, TEI's limit).
 *
 * TEI's native routes report no token counts: usage is the service's approximation (tokens.ts), per text
 * for embeddings and per query + document pair for rerank. The per-input limit is the catalog
 * `context_window` when it has one; otherwise TEI judges (with `truncate: false`, an input over the
 * model's maximum is TEI's 413/422, passed on as a 400 with TEI's message).
 */
const EmbedSettings = z.object({
  type: z.literal('tei'),
  ...UpstreamCommon,
  normalize: z.boolean().default(true),
  truncate: z.boolean().default(false),
  batch: batchSchema({ max_items: 32, max_tokens: 16_384, max_wait_ms: 5, max_concurrent: 4 }),
});
const RerankSettings = z.object({
  type: z.literal('tei'),
  ...UpstreamCommon,
  truncate: z.boolean().default(true),
  max_documents_per_call: z.number().int().min(1).max(10_000).default(32),
  max_concurrent: z.number().int().min(1).max(256).default(4),
});

const NO_LIMIT = Number.MAX_SAFE_INTEGER;

export const teiEmbeddingFactory: EngineFactory<EmbeddingEngine> = {
  type: 'tei',
  create(settings, ctx) {
    const s = parseSettings(EmbedSettings, settings, ctx);
    return new TeiEmbeddingEngine(
      s,
      upstreamTarget(s, ctx),
      requireDimensions(ctx),
      ctx.model.context_window ?? NO_LIMIT,
    );
  },
};

export function requireDimensions(ctx: EngineContext): number {
  const d = ctx.model.dimensions;
  if (!d)
    throw new EngineConfigError(ctx.model.id, 'upstream embedding engines need the catalog `dimensions`');
  return d;
}

/** Checks that the upstream sent one vector of the expected size per text. */
export function checkVectors(
  vectors: number[][],
  count: number,
  dims: number,
  t: UpstreamTarget,
): Float32Array[] {
  if (vectors.length !== count) {
    t.log.error({ got: vectors.length, expected: count }, 'upstream returned a different number of vectors');
    throw upstreamFailed();
  }
  return vectors.map((v) => {
    if (v.length !== dims) {
      t.log.error(
        { got: v.length, expected: dims },
        'upstream vector size differs from the catalog dimensions',
      );
      throw upstreamFailed();
    }
    return Float32Array.from(v);
  });
}

export class TeiEmbeddingEngine implements EmbeddingEngine {
  readonly type = 'tei';

  close(): Promise<void> {
    return this.t.pool.close();
  }
  private readonly info: EmbeddingEngineInfo;

  constructor(
    private readonly s: z.infer<typeof EmbedSettings>,
    private readonly t: UpstreamTarget,
    dimensions: number,
    maxInputTokens = NO_LIMIT,
  ) {
    this.info = { dimensions, maxInputTokens, batch: s.batch };
  }

  async ready(): Promise<EmbeddingEngineInfo> {
    return this.info;
  }

  countTokens(texts: readonly string[]): number[] {
    return texts.map(countTokens);
  }

  async embed(texts: readonly string[], signal: AbortSignal): Promise<EmbedResult> {
    const body = { inputs: texts, normalize: this.s.normalize, truncate: this.s.truncate };
    const raw = await postJson(this.t, '/embed', body, signal);
    const vectors = expectShape(z.array(z.array(z.number())), raw, 'TEI /embed', this.t.log);
    return { vectors: checkVectors(vectors, texts.length, this.info.dimensions, this.t) };
  }
}

export const teiRerankFactory: EngineFactory<RerankEngine> = {
  type: 'tei',
  create(settings, ctx) {
    const s = parseSettings(RerankSettings, settings, ctx);
    return new TeiRerankEngine(s, upstreamTarget(s, ctx), ctx.model.context_window ?? NO_LIMIT);
  },
};

const TeiRankAnswer = z.array(z.object({ index: z.number().int().min(0), score: z.number() }));

export class TeiRerankEngine implements RerankEngine {
  readonly type = 'tei';

  close(): Promise<void> {
    return this.t.pool.close();
  }

  constructor(
    private readonly s: z.infer<typeof RerankSettings>,
    private readonly t: UpstreamTarget,
    private readonly maxQueryTokens: number,
  ) {}

  async ready(): Promise<RerankEngineInfo> {
    return { maxQueryTokens: this.maxQueryTokens, maxConcurrent: this.s.max_concurrent };
  }

  countQueryTokens(query: string): number {
    return countTokens(query);
  }

  async rank(query: string, documents: readonly string[], signal: AbortSignal): Promise<RankResult> {
    const scores = new Array<number>(documents.length).fill(Number.NaN);
    // One failed call stops its siblings.
    const failed = new AbortController();
    const any = AbortSignal.any([signal, failed.signal]);
    const calls: Promise<void>[] = [];
    const step = this.s.max_documents_per_call;
    for (let start = 0; start < documents.length; start += step) {
      const texts = documents.slice(start, start + step);
      calls.push(
        (async () => {
          const body = { query, texts, raw_scores: false, return_text: false, truncate: this.s.truncate };
          const raw = await postJson(this.t, '/rerank', body, any).catch((e: unknown) => {
            failed.abort(e);
            throw e;
          });
          for (const r of expectShape(TeiRankAnswer, raw, 'TEI /rerank', this.t.log)) {
            if (r.index < texts.length) scores[start + r.index] = r.score;
          }
        })(),
      );
    }
    await Promise.all(calls);
    throwIfAborted(signal);
    return { scores: checkScores(scores, 'none', this.t), tokens: pairTokens(query, documents) };
  }
}

/** Scores into [0, 1] (`sigmoid` for upstreams that return logits); a missing score is the upstream's failure. */
export function checkScores(scores: number[], activation: 'none' | 'sigmoid', t: UpstreamTarget): number[] {
  return scores.map((s) => {
    if (!Number.isFinite(s)) {
      t.log.error('upstream left a document without a score');
      throw upstreamFailed();
    }
    const v = activation === 'sigmoid' ? 1 / (1 + Math.exp(-s)) : s;
    return Math.min(1, Math.max(0, v));
  });
}

/** The approximation of what a cross-encoder reads: the query once per document, plus the document. */
export function pairTokens(query: string, documents: readonly string[]): number {
  const q = countTokens(query);
  return documents.reduce((sum, d) => sum + q + countTokens(d), 0);
}
