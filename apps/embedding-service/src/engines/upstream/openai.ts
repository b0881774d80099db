import { z } from 'zod';
import { countTokens } from '../../tokens.js';
import {
  type EmbeddingEngine,
  type EmbeddingEngineInfo,
  type EmbedResult,
  type RankResult,
  type RerankEngine,
  type RerankEngineInfo,
  throwIfAborted,
} from '../engine.js';
import type { EngineFactory } from '../registry.js';
import { batchSchema, parseSettings } from '../settings.js';
import {
  apportion,
  expectShape,
  postJson,
  UpstreamCommon,
  type UpstreamTarget,
  upstreamFailed,
  upstreamTarget,
} from './http.js';
import { checkScores, checkVectors, pairTokens, requireDimensions } from './tei.js';

/**
 * `openai`: an OpenAI-compatible server (vLLM, Infinity, TEI's /v1 routes, llama.cpp server, LocalAI,
 * Ollama ...). `base_url` is the API root that the server's routes hang under, e.g.
 * `http://vllm:8000/v1`.
 *
 * Embeddings: `POST {base_url}/embeddings` `{model, input: [texts], encoding_format: 'float'}` ->
 * `{data: [{index, embedding}], usage: {prompt_tokens}}`. Vectors are put back in `index` order and must
 * have the catalog `dimensions` (required). The upstream's `usage.prompt_tokens` for a call is shared
 * among its texts in proportion to the service's approximation (tokens.ts), so each request of a merged
 * batch is charged its own part and the parts add up to exactly what the upstream counted; without usage
 * from the upstream, the approximation is the usage.
 *
 * Rerank (the Jina / Cohere style that vLLM and Infinity serve): `POST {base_url}/rerank`
 * `{model, query, documents, top_n, return_documents: false}` -> `{results: [{index, relevance_score}]}`.
 * Scores are clamped to [0, 1]; an upstream that returns logits can set `score_activation: sigmoid`.
 * Tokens: the upstream's `usage.total_tokens` (vLLM, Jina) or `meta.billed_units.total_tokens`, else the
 * approximation per query + document pair. `max_documents_per_call` (default 1000) splits long lists.
 */
const EmbedSettings = z.object({
  type: z.literal('openai'),
  ...UpstreamCommon,
  batch: batchSchema({ max_items: 64, max_tokens: 32_768, max_wait_ms: 5, max_concurrent: 4 }),
});
const RerankSettings = z.object({
  type: z.literal('openai'),
  ...UpstreamCommon,
  score_activation: z.enum(['none', 'sigmoid']).default('none'),
  max_documents_per_call: z.number().int().min(1).max(100_000).default(1000),
  max_concurrent: z.number().int().min(1).max(256).default(4),
});

const NO_LIMIT = Number.MAX_SAFE_INTEGER;

export const openaiEmbeddingFactory: EngineFactory<EmbeddingEngine> = {
  type: 'openai',
  create(settings, ctx) {
    const s = parseSettings(EmbedSettings, settings, ctx);
    return new OpenAIEmbeddingEngine(s.model ?? ctx.model.id, upstreamTarget(s, ctx), {
      dimensions: requireDimensions(ctx),
      maxInputTokens: ctx.model.context_window ?? NO_LIMIT,
      batch: s.batch,
    });
  },
};

const EmbeddingsAnswer = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
  usage: z
    .object({ prompt_tokens: z.number().int().min(0) })
    .partial()
    .nullish(),
});

export class OpenAIEmbeddingEngine implements EmbeddingEngine {
  readonly type = 'openai';

  close(): Promise<void> {
    return this.t.pool.close();
  }

  constructor(
    private readonly upstreamModel: string,
    private readonly t: UpstreamTarget,
    private readonly info: EmbeddingEngineInfo,
  ) {}

  async ready(): Promise<EmbeddingEngineInfo> {
    return this.info;
  }

  countTokens(texts: readonly string[]): number[] {
    return texts.map(countTokens);
  }

  async embed(texts: readonly string[], signal: AbortSignal): Promise<EmbedResult> {
    const raw = await postJson(
      this.t,
      '/embeddings',
      { model: this.upstreamModel, input: texts, encoding_format: 'float' },
      signal,
    );
    const answer = expectShape(EmbeddingsAnswer, raw, 'OpenAI-compatible /embeddings', this.t.log);
    // Put the vectors back in input order; a missing, repeated or stray index is the upstream's failure.
    const ordered = new Array<number[]>(texts.length);
    for (const d of answer.data) {
      if (d.index >= texts.length || ordered[d.index]) {
        this.t.log.error(
          { index: d.index, texts: texts.length },
          'upstream returned a stray or repeated index',
        );
        throw upstreamFailed();
      }
      ordered[d.index] = d.embedding;
    }
    const vectors = checkVectors(
      answer.data.length === texts.length ? ordered : answer.data.map((d) => d.embedding),
      texts.length,
      this.info.dimensions,
      this.t,
    );
    const total = answer.usage?.prompt_tokens;
    if (total === undefined) return { vectors };
    return { vectors, tokens: apportion(total, this.countTokens(texts)) };
  }
}

export const openaiRerankFactory: EngineFactory<RerankEngine> = {
  type: 'openai',
  create(settings, ctx) {
    const s = parseSettings(RerankSettings, settings, ctx);
    return new OpenAIRerankEngine(
      s,
      s.model ?? ctx.model.id,
      upstreamTarget(s, ctx),
      ctx.model.context_window ?? NO_LIMIT,
    );
  },
};

const RerankAnswer = z.object({
  results: z.array(z.object({ index: z.number().int().min(0), relevance_score: z.number() })),
  usage: z
    .object({ total_tokens: z.number().int().min(0) })
    .partial()
    .nullish(),
  meta: z
    .object({
      billed_units: z
        .object({ total_tokens: z.number().int().min(0) })
        .partial()
        .nullish(),
    })
    .partial()
    .nullish(),
});

export class OpenAIRerankEngine implements RerankEngine {
  readonly type = 'openai';

  close(): Promise<void> {
    return this.t.pool.close();
  }

  constructor(
    private readonly s: z.infer<typeof RerankSettings>,
    private readonly upstreamModel: string,
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
    const failed = new AbortController();
    const any = AbortSignal.any([signal, failed.signal]);
    const step = this.s.max_documents_per_call;
    let reported: number | null = 0;
    const calls: Promise<void>[] = [];
    for (let start = 0; start < documents.length; start += step) {
      const docs = documents.slice(start, start + step);
      calls.push(
        (async () => {
          const body = {
            model: this.upstreamModel,
            query,
            documents: docs,
            top_n: docs.length,
            return_documents: false,
          };
          const raw = await postJson(this.t, '/rerank', body, any).catch((e: unknown) => {
            failed.abort(e);
            throw e;
          });
          const a = expectShape(RerankAnswer, raw, 'rerank API', this.t.log);
          for (const r of a.results) if (r.index < docs.length) scores[start + r.index] = r.relevance_score;
          const used = a.usage?.total_tokens ?? a.meta?.billed_units?.total_tokens;
          reported = used === undefined || reported === null ? null : reported + used;
        })(),
      );
    }
    await Promise.all(calls);
    throwIfAborted(signal);
    return {
      scores: checkScores(scores, this.s.score_activation, this.t),
      tokens: reported ?? pairTokens(query, documents),
    };
  }
}
