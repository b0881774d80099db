import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Logger } from '@infer/telemetry';
import {
  getLlama,
  type Llama,
  type LlamaEmbeddingContext,
  LlamaLogLevel,
  type LlamaModel,
  type LlamaRankingContext,
  type Token,
} from 'node-llama-cpp';
import { z } from 'zod';
import {
  type EmbeddingEngine,
  type EmbeddingEngineInfo,
  type EmbedResult,
  type RankResult,
  type RerankEngine,
  type RerankEngineInfo,
  throwIfAborted,
} from './engine.js';
import { type EngineFactory, lazy } from './registry.js';
import { batchSchema, EngineConfigError, type EngineContext, parseSettings } from './settings.js';

/**
 * Embedded llama.cpp through node-llama-cpp on CPU (prebuilt binaries, never compiled, no GPU):
 *
 * `llama-cpp-embedding`: a GGUF embedding model (any architecture llama.cpp can embed with: BERT,
 * nomic-bert, Qwen3/Gemma embedding, llama-style models ...). The vector is the model's pooled output
 * (its GGUF `pooling_type`; the last token for models without one), L2-normalised unless
 * `normalize: false`. Its size must equal the catalog `dimensions` when the catalog gives one. Tokens
 * are the model's own tokenizer's, with the BOS/EOS/SEP tokens the model adds.
 *
 * `llama-cpp-rerank`: a GGUF cross-encoder with rank pooling (a classifier head: BERT/XLM-R rerankers
 * such as bge-reranker, jina-reranker, Qwen3-Reranker). Each document is scored as one sequence
 * `query + document` (the model's `chat_template.rerank` or `template` when it has one); the score is
 * the sigmoid of the head's logit, in [0, 1]. A document longer than the context is cut into chunks
 * that overlap by half, and scores as its best chunk. The query may use at most half the context.
 * Tokens: the length of each query + document sequence as the model reads it, summed.
 *
 * Settings: `gguf` (path, required), `threads` (default min(2, cores), never more than the cores: more
 * threads than cores makes llama.cpp crawl, see docs/platform-notes.md), `context_size` (default and maximum:
 * the model's training context, also capped by the catalog `context_window`).
 */
const Common = {
  gguf: z.string().min(1),
  threads: z.number().int().min(1).max(256).optional(),
  context_size: z.number().int().min(8).optional(),
};
const EmbeddingSettings = z.object({
  type: z.literal('llama-cpp-embedding'),
  ...Common,
  normalize: z.boolean().default(true),
  batch: batchSchema({ max_items: 32, max_tokens: 16_384, max_wait_ms: 5, max_concurrent: 1 }),
});
const RerankSettings = z.object({
  type: z.literal('llama-cpp-rerank'),
  ...Common,
  /** Overrides the model's rerank template; must contain {{query}} and {{document}}. */
  template: z
    .string()
    .refine(
      (t) => t.includes('{{query}}') && t.includes('{{document}}'),
      'must contain {{query}} and {{document}}',
    )
    .optional(),
  max_concurrent: z.number().int().min(1).max(16).default(1),
});

/** One llama.cpp binding per process, loaded on first use. */
let llamaPromise: Promise<Llama> | null = null;
let llamaLog: Logger | null = null;

function runtime(log: Logger): Promise<Llama> {
  llamaLog ??= log;
  llamaPromise ??= getLlama({
    gpu: false,
    build: 'never',
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
      const msg = message.trim();
      if (!msg) return;
      if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal)
        llamaLog?.error({ llama: msg }, 'llama.cpp');
      else llamaLog?.debug({ llama: msg }, 'llama.cpp');
    },
  }).catch((e: unknown) => {
    llamaPromise = null;
    throw e;
  });
  return llamaPromise;
}

export function defaultThreads(requested?: number): number {
  const cores = availableParallelism();
  return Math.max(1, Math.min(requested ?? Math.min(2, cores), cores));
}

async function loadModel(path: string, ctx: EngineContext): Promise<LlamaModel> {
  if (!existsSync(path)) throw new EngineConfigError(ctx.model.id, `GGUF file not found: ${path}`);
  const llama = await runtime(ctx.log);
  try {
    return await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  } catch (e) {
    throw new EngineConfigError(ctx.model.id, `llama.cpp could not load ${path}: ${(e as Error).message}`);
  }
}

/** Tokens per sequence: the setting, capped by the training context and the catalog context_window. */
function contextSize(model: LlamaModel, requested: number | undefined, ctx: EngineContext): number {
  const train = model.trainContextSize;
  return Math.max(
    8,
    Math.min(requested ?? train, train, ctx.model.context_window ?? Number.POSITIVE_INFINITY),
  );
}

export const llamaCppEmbeddingFactory: EngineFactory<EmbeddingEngine> = {
  type: 'llama-cpp-embedding',
  create(settings, ctx) {
    return new LlamaCppEmbeddingEngine(parseSettings(EmbeddingSettings, settings, ctx), ctx);
  },
};

export class LlamaCppEmbeddingEngine implements EmbeddingEngine {
  readonly type = 'llama-cpp-embedding';
  private readonly state = lazy(() => this.load());
  private loaded: { model: LlamaModel; context: LlamaEmbeddingContext; info: EmbeddingEngineInfo } | null =
    null;

  constructor(
    private readonly s: z.infer<typeof EmbeddingSettings>,
    private readonly ctx: EngineContext,
  ) {}

  private async load() {
    const model = await loadModel(this.s.gguf, this.ctx);
    try {
      const size = contextSize(model, this.s.context_size, this.ctx);
      const context = await model.createEmbeddingContext({
        contextSize: size,
        threads: defaultThreads(this.s.threads),
      });
      const dims = model.embeddingVectorSize;
      if (this.ctx.model.dimensions && this.ctx.model.dimensions !== dims) {
        await context.dispose();
        throw new EngineConfigError(
          this.ctx.model.id,
          `the GGUF makes ${dims}-dimension vectors but the catalog says dimensions: ${this.ctx.model.dimensions}`,
        );
      }
      const info: EmbeddingEngineInfo = {
        dimensions: dims,
        // The context must hold the whole input (node-llama-cpp refuses inputs of contextSize tokens).
        maxInputTokens: size - 1,
        batch: this.s.batch,
      };
      this.loaded = { model, context, info };
      this.ctx.log.info({ gguf: this.s.gguf, dimensions: dims, context: size }, 'embedding model loaded');
      return this.loaded;
    } catch (e) {
      await model.dispose();
      if (e instanceof EngineConfigError) throw e;
      throw new EngineConfigError(
        this.ctx.model.id,
        `llama.cpp could not create a context: ${(e as Error).message}`,
      );
    }
  }

  async ready(): Promise<EmbeddingEngineInfo> {
    return (await this.state.get()).info;
  }

  countTokens(texts: readonly string[]): number[] {
    const l = this.loaded;
    if (!l) throw new Error('countTokens before ready()');
    return texts.map((t) => l.context.calculateInputLength(t));
  }

  /**
   * Token-id input: ids of the model's own tokenizer (the GGUF's vocabulary), turned back into the text
   * they spell, which is then embedded (with the BOS/EOS the model adds). An id outside the vocabulary
   * is refused before it reaches llama.cpp.
   */
  detokenize(ids: readonly number[]): string {
    const l = this.loaded;
    if (!l) throw new Error('detokenize before ready()');
    const size = l.model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
    for (const id of ids) {
      if (id >= size) throw new Error(`token id ${id} is outside the model's vocabulary (${size} tokens)`);
    }
    return l.model.detokenize(ids as Token[]);
  }

  async embed(texts: readonly string[], signal: AbortSignal): Promise<EmbedResult> {
    const { context } = await this.state.get();
    const vectors: Float32Array[] = [];
    for (const text of texts) {
      throwIfAborted(signal);
      const e = await context.getEmbeddingFor(text);
      const v = Float32Array.from(e.vector);
      if (this.s.normalize) normalize(v);
      vectors.push(v);
    }
    return { vectors };
  }

  async close(): Promise<void> {
    const p = this.state.peek();
    if (!p) return;
    const l = await p.catch(() => null);
    if (!l) return;
    await l.context.dispose();
    await l.model.dispose();
  }
}

export const llamaCppRerankFactory: EngineFactory<RerankEngine> = {
  type: 'llama-cpp-rerank',
  create(settings, ctx) {
    return new LlamaCppRerankEngine(parseSettings(RerankSettings, settings, ctx), ctx);
  },
};

/** Documents ranked per call to node-llama-cpp, so that a cancel is heard between groups. */
const RANK_GROUP = 8;

export class LlamaCppRerankEngine implements RerankEngine {
  readonly type = 'llama-cpp-rerank';
  private readonly state = lazy(() => this.load());
  private loaded: { model: LlamaModel; context: LlamaRankingContext; info: RerankEngineInfo } | null = null;

  constructor(
    private readonly s: z.infer<typeof RerankSettings>,
    private readonly ctx: EngineContext,
  ) {}

  private async load() {
    const model = await loadModel(this.s.gguf, this.ctx);
    try {
      const size = contextSize(model, this.s.context_size, this.ctx);
      const context = await model.createRankingContext({
        contextSize: size,
        threads: defaultThreads(this.s.threads),
        ...(this.s.template
          ? { template: this.s.template as `${string}{{query}}${string}{{document}}${string}` }
          : {}),
      });
      const info: RerankEngineInfo = {
        maxQueryTokens: Math.floor(context.contextSize / 2),
        maxConcurrent: this.s.max_concurrent,
      };
      this.loaded = { model, context, info };
      this.ctx.log.info({ gguf: this.s.gguf, context: context.contextSize }, 'rerank model loaded');
      return this.loaded;
    } catch (e) {
      await model.dispose();
      throw new EngineConfigError(
        this.ctx.model.id,
        `llama.cpp cannot rank with this model: ${(e as Error).message}`,
      );
    }
  }

  async ready(): Promise<RerankEngineInfo> {
    return (await this.state.get()).info;
  }

  countQueryTokens(query: string): number {
    const l = this.loaded;
    if (!l) throw new Error('countQueryTokens before ready()');
    return l.model.tokenize(query).length;
  }

  async rank(query: string, documents: readonly string[], signal: AbortSignal): Promise<RankResult> {
    const { context } = await this.state.get();
    const scores: number[] = [];
    let tokens = 0;
    for (let i = 0; i < documents.length; i += RANK_GROUP) {
      throwIfAborted(signal);
      const group = documents.slice(i, i + RANK_GROUP);
      for (const d of group) tokens += context.calculateInputLength(query, d);
      const s = await context.rankAll(query, group as string[], { onOverflow: { type: 'maxChunk' } });
      scores.push(...s);
    }
    return { scores, tokens };
  }

  async close(): Promise<void> {
    const p = this.state.peek();
    if (!p) return;
    const l = await p.catch(() => null);
    if (!l) return;
    await l.context.dispose();
    await l.model.dispose();
  }
}

function normalize(v: Float32Array): void {
  let n = 0;
  for (const x of v) n += x * x;
  if (n === 0) return;
  const inv = 1 / Math.sqrt(n);
  for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * inv;
}
