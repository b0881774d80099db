import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { EmbeddingListSchema, type ServiceRequest, Subjects } from '@infer/contracts';
import { ServiceCoreModule } from '@infer/runtime';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import { Test, type TestingModule } from '@nestjs/testing';
import { EMBEDDERS, EmbeddingController, EmbeddingServiceModule, RANKERS } from './embedding.module.js';
import type { EmbeddingEngine, RerankEngine } from './engines/engine.js';
import type { EngineRegistry } from './engines/registry.js';
import { catalogEntry, neverAborted, silentLog } from './testing/catalog.js';

/**
 * The embedding service's Nest wiring, compiled with its real providers (the built-in engine registries,
 * the batcher pool) and no NATS connection: a provider that cannot be injected fails here in seconds.
 */
describe('EmbeddingServiceModule wiring (Test.createTestingModule)', () => {
  let moduleRef: TestingModule;

  before(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ServiceCoreModule.forRoot(silentLog), EmbeddingServiceModule.forRoot({})],
    }).compile();
  });
  after(async () => {
    await moduleRef?.close();
  });

  it('builds the controller on its two NATS subjects, with the built-in registries', () => {
    const controller = moduleRef.get(EmbeddingController);
    const patterns = (['embeddings', 'rerank'] as const).map((m) =>
      Reflect.getMetadata(PATTERN_METADATA, controller[m]),
    );
    assert.deepEqual(patterns, [[Subjects.embeddings], [Subjects.rerank]]);
    assert.ok(moduleRef.get<EngineRegistry<EmbeddingEngine>>(EMBEDDERS).types.includes('lexical-hash'));
    assert.ok(moduleRef.get<EngineRegistry<RerankEngine>>(RANKERS).types.length > 0);
  });

  it('answers an embeddings request through the injected registry (lexical-hash, no weights)', async () => {
    const model = catalogEntry({ id: 'embed-wiring', dimensions: 8, engine: { type: 'lexical-hash' } });
    const req: ServiceRequest<unknown> = {
      requestId: randomUUID(),
      memberId: 'member',
      keyId: 'key',
      model,
      body: { model: model.id, input: ['hello wiring'] },
      deadline: Date.now() + 10_000,
      stream: false,
    };
    const end = await moduleRef
      .get(EmbeddingController)
      .embeddings(req as never, { signal: neverAborted, log: silentLog, emit: () => undefined });
    const res = EmbeddingListSchema.parse(end.data);
    assert.equal(res.data[0]?.embedding.length, 8);
    assert.ok((end.usage.prompt_tokens ?? 0) > 0);
  });
});
