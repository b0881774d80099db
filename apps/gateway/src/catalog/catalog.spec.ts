import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiError, type CatalogEntryInput, CatalogEntrySchema } from '@infer/contracts';
import { CatalogSnapshot } from './catalog.js';

const entry = (
  id: string,
  rank: number,
  tiers: CatalogEntryInput['tiers'],
  kind: CatalogEntryInput['kind'] = 'chat',
) => CatalogEntrySchema.parse({ id, rank, tiers, kind, engine: { type: 'simulator' } });

const all = ['community', 'inference', 'premium'] as const;
const snap = new CatalogSnapshot([
  entry('chat-E', 5, [...all]),
  entry('chat-G', 0, ['premium']),
  entry('chat-A', 1, [...all]),
  entry('image-model', 20, ['inference', 'premium'], 'image'),
]);

describe('CatalogSnapshot', () => {
  it('holds frozen copies of its entries (their JSON is reused per envelope), leaving the given ones alone', () => {
    const given = entry('chat-F', 3, [...all]);
    const held = new CatalogSnapshot([given]).resolve('chat-F', 'premium', ['chat'], '/v1/chat/completions');
    assert.notEqual(held, given);
    assert.deepEqual(held, given);
    assert.ok(Object.isFrozen(held) && Object.isFrozen(held.engine) && Object.isFrozen(held.tiers));
    assert.throws(() => {
      (held as { rank: number }).rank = 9;
    }, TypeError);
    assert.ok(!Object.isFrozen(given));
  });

  it('lists most capable first, only what the tier reaches', () => {
    assert.deepEqual(
      snap.listFor('premium').data.map((m) => m.id),
      ['chat-G', 'chat-A', 'chat-E', 'image-model'],
    );
    assert.deepEqual(
      snap.listFor('inference').data.map((m) => m.id),
      ['chat-A', 'chat-E', 'image-model'],
    );
    assert.deepEqual(
      snap.listFor('community').data.map((m) => m.id),
      ['chat-A', 'chat-E'],
    );
    assert.deepEqual(Object.keys(snap.listFor('community').data[0] ?? {}).sort(), [
      'created',
      'endpoints',
      'id',
      'object',
      'owned_by',
    ]);
    const byId = new Map(snap.listFor('premium').data.map((m) => [m.id, m.endpoints]));
    assert.deepEqual(byId.get('image-model'), ['/v1/images/generations', '/v1/images/edits']);
    assert.ok(byId.get('chat-A')?.includes('/v1/chat/completions'));
  });

  it('resolves in the spec order: 404, wrong endpoint 400, tier 401 auth_error', () => {
    assert.equal(snap.resolve('chat-A', 'community', ['chat'], '/v1/chat/completions').id, 'chat-A');
    assert.throws(
      () => snap.resolve('nope', 'premium', ['chat'], '/v1/chat/completions'),
      (e: ApiError) => e.status === 404 && e.code === 'model_not_found' && e.param === 'model',
    );
    assert.throws(
      () => snap.resolve('image-model', 'premium', ['chat'], '/v1/chat/completions'),
      (e: ApiError) => e.status === 400 && e.param === 'model',
    );
    assert.throws(
      () => snap.resolve('chat-G', 'inference', ['chat'], '/v1/chat/completions'),
      (e: ApiError) =>
        e.status === 401 &&
        e.type === 'auth_error' &&
        e.code === 'invalid_api_key' &&
        /access to the requested model/.test(e.message),
    );
  });

  it('resolves aliases to their model (tier rules included); ids win over aliases; lists show ids', () => {
    const aliased = new CatalogSnapshot([
      CatalogEntrySchema.parse({
        id: 'chat-E',
        rank: 1,
        tiers: [...all],
        kind: 'chat',
        aliases: ['claude-opus-5-5', 'chat-G'],
        engine: { type: 'simulator' },
      }),
      CatalogEntrySchema.parse({
        id: 'chat-G',
        rank: 0,
        tiers: ['premium'],
        kind: 'chat',
        aliases: ['claude-haiku-5-5'],
        engine: { type: 'simulator' },
      }),
    ]);
    assert.equal(aliased.resolve('claude-opus-5-5', 'community', ['chat'], '/v1/messages').id, 'chat-E');
    assert.equal(aliased.resolve('chat-G', 'premium', ['chat'], '/v1/messages').id, 'chat-G');
    assert.throws(
      () => aliased.resolve('claude-haiku-5-5', 'community', ['chat'], '/v1/messages'),
      (e: ApiError) => e.status === 401 && e.param === 'model',
    );
    assert.deepEqual(
      aliased.listFor('premium').data.map((m) => m.id),
      ['chat-G', 'chat-E'],
    );
    assert.deepEqual(aliased.anthropicListFor('community'), {
      data: [{ type: 'model', id: 'chat-E', display_name: 'chat-E', created_at: '2026-01-01T00:00:00.000Z' }],
      has_more: false,
      first_id: 'chat-E',
      last_id: 'chat-E',
    });
  });
});
