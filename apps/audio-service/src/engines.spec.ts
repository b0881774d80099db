import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { EngineRegistry } from './engines.js';

describe('EngineRegistry', () => {
  const registry = new EngineRegistry<{ close(): Promise<void> }>('speech', createLogger('t', 'silent'), [
    { type: 'fake', create: () => ({ close: async () => {} }) },
  ]);

  it('is a 500 naming the model for an engine type it does not provide', () => {
    assert.throws(
      () => registry.get({ id: 'x', engine: { type: 'espeak' } } as unknown as CatalogEntry),
      (e: unknown) =>
        e instanceof ApiError && e.status === 500 && /'espeak'/.test(e.message) && /fake/.test(e.message),
    );
  });
});
