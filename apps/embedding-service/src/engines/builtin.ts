import { bm25Factory } from './bm25.js';
import type { EmbeddingEngine, RerankEngine } from './engine.js';
import { gloveSifFactory } from './glove-sif.js';
import { hybridFactory } from './hybrid.js';
import { lexicalHashFactory } from './lexical-hash.js';
import { llamaCppEmbeddingFactory, llamaCppRerankFactory } from './llama-cpp.js';
import type { EngineFactory } from './registry.js';
import { openaiEmbeddingFactory, openaiRerankFactory } from './upstream/openai.js';
import { teiEmbeddingFactory, teiRerankFactory } from './upstream/tei.js';

/** Embedding engines by catalog `engine.type`. */
export const builtinEmbeddingFactories: ReadonlyArray<EngineFactory<EmbeddingEngine>> = [
  gloveSifFactory,
  lexicalHashFactory,
  llamaCppEmbeddingFactory,
  teiEmbeddingFactory,
  openaiEmbeddingFactory,
];

/** Rerank engines by catalog `engine.type`. */
export const builtinRerankFactories: ReadonlyArray<EngineFactory<RerankEngine>> = [
  hybridFactory,
  bm25Factory,
  llamaCppRerankFactory,
  teiRerankFactory,
  openaiRerankFactory,
];
