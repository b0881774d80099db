import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiError, CatalogEntrySchema } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { builtinEngineFactories } from './builtin.js';
import { EngineRegistry } from './registry.js';
import { SimulatorEngine } from './simulator.js';

const log = createLogger('registry-spec', 'silent');
const entry = (id: string, engine: Record<string, unknown>) =>
  CatalogEntrySchema.parse({ id, kind: 'chat', rank: 1, tiers: ['inference'], engine });

describe('EngineRegistry', () => {
  it('creates the engine named by the catalog entry and caches it per model and settings', () => {
    const reg = new EngineRegistry(log, builtinEngineFactories);
    const a = reg.get(entry('a', { type: 'simulator', itl_ms: 5 }));
    assert.ok(a instanceof SimulatorEngine);
    assert.equal(reg.get(entry('a', { itl_ms: 5, type: 'simulator' })), a, 'same settings, same instance');
    assert.notEqual(
      reg.get(entry('b', { type: 'simulator', itl_ms: 5 })),
      a,
      'another model, another instance',
    );
    const changed = reg.get(entry('a', { type: 'simulator', itl_ms: 6 }));
    assert.notEqual(changed, a, 'changed settings replace the engine');
    assert.equal((changed as SimulatorEngine).settings.itl_ms, 6);
  });

  it('answers an unknown engine type with a clean 500 naming the type', () => {
    const reg = new EngineRegistry(log, builtinEngineFactories);
    assert.throws(
      () => reg.get(entry('x', { type: 'quantum' })),
      (e: ApiError) => e.status === 500 && /'quantum'/.test(e.message) && e.type === 'server_error',
    );
  });
});
