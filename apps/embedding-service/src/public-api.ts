/**
 * What the embedding-service offers other projects (bench/, test/): its start function, its engines
 * and the test doubles the benches run them with. Imported as `@infer/embedding-service/public`.
 */
export { startEmbeddingService } from './app.js';
export { bm25Factory } from './engines/bm25.js';
export { builtinEmbeddingFactories } from './engines/builtin.js';
export type { EmbeddingEngine, RerankEngine } from './engines/engine.js';
export { gloveSifFactory } from './engines/glove-sif.js';
export { hybridFactory } from './engines/hybrid.js';
export { lexicalHashFactory } from './engines/lexical-hash.js';
export { EngineRegistry } from './engines/registry.js';
export { catalogEntry, cosine, engineContext, neverAborted } from './testing/catalog.js';
export { startFakeUpstream } from './testing/fake-upstream.js';
export { tinyLlamaEmbeddingGguf, writeModel } from './testing/tiny-models.js';
