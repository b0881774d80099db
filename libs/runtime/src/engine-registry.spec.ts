import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { ApiError, type CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { pino } from 'pino';
import { z } from 'zod';
import {
  type EngineFactory,
  EngineRegistry,
  type EngineRegistryOptions,
  parseEngineSettings,
  stableJson,
} from './engine-registry.js';

const log = createLogger('engine-registry-spec', 'silent');
const model = (id: string, engine: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ({ id, engine, ...extra }) as unknown as CatalogEntry;

interface Fake {
  id: string;
  settings: Record<string, unknown>;
  close(): Promise<void>;
}

/** A registry of `fake` engines that records what it made and what it closed. */
function fakes(opts: EngineRegistryOptions = { service: 'test service' }) {
  const made: string[] = [];
  const closed: string[] = [];
  const factory: EngineFactory<Fake> = {
    type: 'fake',
    create(settings) {
      const id = stableJson(settings);
      made.push(id);
      return { id, settings, close: async () => void closed.push(id) };
    },
  };
  return { registry: new EngineRegistry<Fake>(log, [factory], opts), made, closed };
}

describe('EngineRegistry', () => {
  it('keeps one engine per model and settings, and replaces it when nested settings change', async () => {
    const { registry, made, closed } = fakes();
    const a = registry.get(model('m', { type: 'fake', voices: { x: 'a' } }));
    assert.equal(
      registry.get(model('m', { voices: { x: 'a' }, type: 'fake' })),
      a,
      'same settings, same instance',
    );
    assert.notEqual(
      registry.get(model('n', { type: 'fake', voices: { x: 'a' } })),
      a,
      'another model, another instance',
    );
    const b = registry.get(model('m', { type: 'fake', voices: { x: 'b' } }));
    assert.notEqual(b, a, 'changed settings replace the engine');
    assert.deepEqual(b.settings.voices, { x: 'b' });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(closed, [a.id]);
    assert.equal(made.length, 3);
  });

  it('closes replaced engines and all engines on close', async () => {
    const closed: string[] = [];
    const reg = new EngineRegistry<{ close(): Promise<void> }>(log, [
      { type: 'fake', create: (s) => ({ close: async () => void closed.push(String(s.v)) }) },
    ]);
    reg.get(model('m', { type: 'fake', v: 1 }));
    reg.get(model('m', { type: 'fake', v: 2 }));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(closed, ['1']);
    await reg.close();
    assert.deepEqual(closed, ['1', '2']);
    await reg.close();
    assert.deepEqual(closed, ['1', '2'], 'closes each engine once');
  });

  it('closes quietly: an engine that fails to close is logged as a warning', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    let closes = 0;
    const reg = new EngineRegistry<{ close(): Promise<void> }>(pino({ level: 'warn' }, sink), [
      {
        type: 'failing',
        create: () => ({
          close: async () => {
            closes++;
            throw new Error('stuck');
          },
        }),
      },
      { type: 'plain', create: () => ({}) as { close(): Promise<void> } },
    ]);
    reg.get(model('a', { type: 'failing' }));
    reg.get(model('b', { type: 'plain' }));
    await reg.close();
    assert.equal(closes, 1);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.model, 'a');
    assert.equal(lines[0]?.engine, 'failing');
    assert.equal(lines[0]?.msg, 'engine did not close cleanly');
  });

  it('answers an unknown engine type with a clean 500 naming the model, the type and the types it has', () => {
    const { registry, made } = fakes({ service: 'audio service', capability: 'speech' });
    const check = (e: unknown) =>
      e instanceof ApiError &&
      e.status === 500 &&
      e.type === 'server_error' &&
      e.message ===
        "Model 'x' is configured with engine type 'espeak', which the audio service does not provide for speech (it has: fake).";
    assert.throws(() => registry.get(model('x', { type: 'espeak' })), check);
    assert.throws(() => registry.assertServes(model('x', { type: 'espeak' })), check);
    registry.assertServes(model('x', { type: 'fake' }));
    assert.equal(made.length, 0, 'assertServes builds nothing');
    assert.throws(
      () => new EngineRegistry(log).get(model('y', { type: 'quantum' })),
      (e: unknown) =>
        e instanceof ApiError &&
        e.message ===
          "Model 'y' is configured with engine type 'quantum', which this service does not provide (it has: ).",
    );
  });

  it('lets a service choose the unknown-type error and what else identifies an engine', async () => {
    const { registry, made, closed } = fakes({
      key: (m) => ({ settings: m.engine, dimensions: m.dimensions }),
      unknownType: (m, type, types) => new Error(`${m.id}/${type}/${types.join('+')}`),
    });
    assert.throws(
      () => registry.get(model('x', { type: 'nope' })),
      (e: unknown) => e instanceof Error && e.message === 'x/nope/fake',
    );
    const a = registry.get(model('m', { type: 'fake' }, { dimensions: 8 }));
    assert.equal(registry.get(model('m', { type: 'fake' }, { dimensions: 8 })), a);
    assert.notEqual(registry.get(model('m', { type: 'fake' }, { dimensions: 16 })), a);
    await new Promise((r) => setImmediate(r));
    assert.equal(made.length, 2);
    assert.deepEqual(closed, [a.id]);
  });

  it('gives factories the model, a logger and the context of the service', () => {
    const seen: Array<{ model: string; env: string | undefined; log: boolean }> = [];
    const reg = new EngineRegistry<object, { env?: Record<string, string> }>(
      log,
      [
        {
          type: 'fake',
          create(_settings, ctx) {
            seen.push({ model: ctx.model.id, env: ctx.env?.KEY, log: typeof ctx.log.info === 'function' });
            return {};
          },
        },
      ],
      { context: { env: { KEY: 'v' } } },
    );
    reg.register({ type: 'other', create: () => ({}) });
    assert.deepEqual(reg.types, ['fake', 'other']);
    reg.get(model('m', { type: 'fake' }));
    assert.deepEqual(seen, [{ model: 'm', env: 'v', log: true }]);
  });
});

describe('parseEngineSettings', () => {
  const Schema = z.object({ type: z.literal('fake'), base_url: z.url(), n: z.number().int().default(2) });

  it('returns the parsed settings', () => {
    assert.deepEqual(parseEngineSettings(Schema, { type: 'fake', base_url: 'http://x/' }, model('m', {})), {
      type: 'fake',
      base_url: 'http://x/',
      n: 2,
    });
  });

  it('answers invalid settings with a clean 500 naming the model, the engine type and every problem', () => {
    assert.throws(
      () => parseEngineSettings(Schema, { type: 'fake', base_url: 'nope', n: 1.5 }, model('bad', {})),
      (e: unknown) =>
        e instanceof ApiError &&
        e.status === 500 &&
        e.type === 'server_error' &&
        /^Model 'bad' has invalid fake engine settings: base_url: .+; n: .+\.$/.test(e.message),
    );
    assert.throws(
      () => parseEngineSettings(z.object({ a: z.string() }), null, model('m', {})),
      (e: unknown) =>
        e instanceof ApiError && /^Model 'm' has invalid engine settings: engine: .+\.$/.test(e.message),
    );
  });
});

describe('stableJson', () => {
  it('sorts keys at every level', () => {
    assert.equal(
      stableJson({ b: 1, a: { d: [1, { f: 1, e: 2 }], c: null } }),
      '{"a":{"c":null,"d":[1,{"e":2,"f":1}]},"b":1}',
    );
  });

  it('leaves out undefined members', () => {
    assert.equal(stableJson({ a: undefined, b: [undefined] }), '{"b":[null]}');
  });
});
