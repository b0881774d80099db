import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/service-kit';
import { EngineRegistry, stableJson } from './engines.js';

describe('EngineRegistry', () => {
  const made: string[] = [];
  const closed: string[] = [];
  const registry = new EngineRegistry<{ id: string; close(): Promise<void> }>(
    'speech',
    createLogger('t', 'silent'),
    [
      {
        type: 'fake',
        create(settings) {
          const id = stableJson(settings);
          made.push(id);
          return {
            id,
            close: async () => {
              closed.push(id);
            },
          };
        },
      },
    ],
  );
  const model = (engine: Record<string, unknown>) =>
    ({ id: 'm', engine: { type: 'fake', ...engine } }) as unknown as CatalogEntry;

  it('keeps one engine per model and settings, and replaces it when nested settings change', async () => {
    const a = registry.get(model({ voices: { x: 'a' } }));
    assert.equal(registry.get(model({ voices: { x: 'a' } })), a);
    const b = registry.get(model({ voices: { x: 'b' } }));
    assert.notEqual(b, a);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(closed, [a.id]);
    assert.equal(made.length, 2);
  });

  it('is a 500 naming the model for an engine type it does not provide', () => {
    assert.throws(
      () => registry.get({ id: 'x', engine: { type: 'espeak' } } as unknown as CatalogEntry),
      (e: unknown) =>
        e instanceof ApiError && e.status === 500 && /'espeak'/.test(e.message) && /fake/.test(e.message),
    );
  });

  it('sorts keys at every level', () => {
    assert.equal(
      stableJson({ b: 1, a: { d: [1, { f: 1, e: 2 }], c: null } }),
      '{"a":{"c":null,"d":[1,{"e":2,"f":1}]},"b":1}',
    );
  });
});
