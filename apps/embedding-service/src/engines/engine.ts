/**
 * The engine interfaces of the embedding service (docs/architecture.md, rule 3: engines are adapters), one
 * per capability. Engines know nothing of NATS, envelopes or the wire format: they turn texts into
 * vectors, or a query and documents into scores, and count the tokens they read.
 *
 * Implementations (src/engines/*, registered in builtin.ts by catalog `engine.type`):
 *   embeddings: lexical-hash (embedded, non-neural), llama-cpp-embedding (embedded llama.cpp),
 *               tei (Text Embeddings Inference /embed), openai (any OpenAI-compatible /embeddings)
 *   rerank:     bm25 (embedded, non-neural), llama-cpp-rerank (embedded llama.cpp, rank pooling),
 *               tei (Text Embeddings Inference /rerank), openai (vLLM / Infinity / Jina style /rerank)
 *
 * Cancellation: when `signal` aborts, an engine stops as soon as it can (between items, or by aborting
 * its HTTP call) and rejects; the handler answers with the abort reason.
 *
 * Errors: an engine throws ApiError for what the client must hear (400 for an input the model refuses,
 * with `param` when it can name it); anything else becomes a clean 500.
 */
import type { BatchSettings } from './settings.js';

export interface EmbeddingEngineInfo {
  /** Size of the vectors the engine returns. */
  dimensions: number;
  /** Most tokens one input may have (`countTokens`); longer inputs are a 400 naming the input. */
  maxInputTokens: number;
  /** How the service merges concurrent requests into calls of `embed` (see batching/batcher.ts). */
  batch: BatchSettings;
}

export interface EmbedResult {
  /** One vector per text, in the order of the texts, each of `dimensions` values. */
  vectors: Float32Array[];
  /**
   * Tokens read per text, when the engine knows them better after the call than `countTokens` did
   * before (an upstream that reports usage). Omitted: `countTokens` is the usage.
   */
  tokens?: number[];
}

export interface EmbeddingEngine {
  /** Engine type as in the catalog (`model.engine.type`), for logs. */
  readonly type: string;
  /** Loads what the engine needs (weights, a connection check is NOT done) and says what it serves. */
  ready(): Promise<EmbeddingEngineInfo>;
  /** Tokens of each text as this engine counts them (usage and the per-input limit). After ready(). */
  countTokens(texts: readonly string[]): number[];
  embed(texts: readonly string[], signal: AbortSignal): Promise<EmbedResult>;
  /**
   * Token-id input: the text `ids` spell in the model's tokenizer (throws, with a message for the
   * client, on an id outside the vocabulary). Engines without it refuse token ids (400). After ready().
   */
  detokenize?(ids: readonly number[]): string;
  /** Releases weights and connections (service stop, or the catalog changed the model's settings). */
  close?(): Promise<void>;
}

export interface RerankEngineInfo {
  /** Most tokens the query may have; a longer query is a 400 on `query`. */
  maxQueryTokens: number;
  /** Rerank calls of one model that run at once; more wait in line. */
  maxConcurrent: number;
}

export interface RankResult {
  /** One relevance score in [0, 1] per document, in the order of the documents. */
  scores: number[];
  /** Tokens the engine read for the whole request (see each engine for how it counts). */
  tokens: number;
}

export interface RerankEngine {
  readonly type: string;
  ready(): Promise<RerankEngineInfo>;
  /** Tokens of the query as this engine counts them (for the limit check). After ready(). */
  countQueryTokens(query: string): number;
  rank(query: string, documents: readonly string[], signal: AbortSignal): Promise<RankResult>;
  close?(): Promise<void>;
}

/** Rejects with the signal's reason when it is aborted. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason ?? new Error('aborted');
}

/** Lets other work (NATS, timers) run during long CPU loops. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}
