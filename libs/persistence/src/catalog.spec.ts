import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadCatalogFile, parseCatalog } from './catalog.js';
import { InvalidInputError } from './errors.js';
import { createRepositories, type Repositories } from './repositories.js';
import { createTestDatabase, type TestDatabase } from './testing.js';

const MODELS_YAML = fileURLToPath(new URL('../../../config/models.yaml', import.meta.url));

const ORDER = [
  'chat-G',
  'chat-A',
  'chat-B',
  'chat-D',
  'chat-C',
  'chat-E',
  'chat-F',
  'embed-model',
  'rerank',
  'tts-model',
  'stt-model',
  'image-model',
];

describe('config/models.yaml', () => {
  it("routes Claude Code's default model names to chat-E and its small, fast one to chat-F", async () => {
    const { models } = await loadCatalogFile(MODELS_YAML);
    const aliases = Object.fromEntries(models.filter((m) => m.aliases.length).map((m) => [m.id, m.aliases]));
    assert.deepEqual(aliases, {
      'chat-E': ['claude-opus-5-5', 'claude-sonnet-5-5', 'claude-sonnet-4-5'],
      'chat-F': ['claude-haiku-5-5', 'claude-haiku-4-5'],
    });
  });

  it('refuses an alias that is another model id or a second alias', () => {
    const doc = (a: string, b: string) => `models:
  - { id: m1, kind: chat, rank: 1, tiers: [premium], aliases: [${a}], engine: { type: simulator } }
  - { id: m2, kind: chat, rank: 2, tiers: [premium], aliases: [${b}], engine: { type: simulator } }
`;
    assert.equal(parseCatalog(doc('x', 'y')).models[0]?.aliases[0], 'x');
    assert.throws(() => parseCatalog(doc('m2', 'y')), /alias m2 of model m1/);
    assert.throws(() => parseCatalog(doc('x', 'x')), /alias x of model m2/);
  });

  it('validates and reproduces the spec capability table', async () => {
    const { models } = await loadCatalogFile(MODELS_YAML);
    const byId = new Map(models.map((m) => [m.id, m]));
    assert.deepEqual(
      [...models].sort((a, b) => a.rank - b.rank).map((m) => m.id),
      ORDER,
    );
    const all = ['community', 'inference', 'premium'];
    for (const m of models) {
      const expected =
        m.id === 'chat-G' ? ['premium'] : m.id === 'image-model' ? ['inference', 'premium'] : all;
      assert.deepEqual(m.tiers, expected, `${m.id} tiers`);
    }
    const ctx = (id: string) => byId.get(id)?.context_window;
    assert.equal(ctx('chat-A'), 1_048_576);
    assert.equal(ctx('chat-B'), 1_048_576);
    assert.equal(ctx('chat-C'), 262_144);
    assert.equal(ctx('chat-D'), 1_048_576);
    assert.equal(ctx('chat-G'), 1_048_576);
    assert.equal(ctx('chat-E'), 131_072);
    assert.equal(ctx('chat-F'), 131_072);
    const reasoning = Object.fromEntries(
      models.filter((m) => m.kind === 'chat').map((m) => [m.id, m.capabilities.reasoning]),
    );
    assert.deepEqual(reasoning, {
      'chat-G': 'fixed_on',
      'chat-A': 'effort',
      'chat-B': 'always',
      'chat-D': 'fixed_on',
      'chat-C': 'fixed_on',
      'chat-E': 'default_on',
      'chat-F': 'default_off',
    });
    const withCap = (cap: keyof (typeof models)[number]['capabilities']) =>
      models
        .filter((m) => m.capabilities[cap] === true)
        .map((m) => m.id)
        .sort();
    assert.deepEqual(withCap('vision'), ['chat-A', 'chat-B', 'chat-C', 'chat-D', 'chat-E', 'chat-F']);
    assert.deepEqual(withCap('audio_input'), ['chat-B']);
    assert.deepEqual(withCap('response_format'), ['chat-E', 'chat-F']);
    assert.deepEqual(withCap('completions'), ['chat-E']);
    assert.deepEqual(withCap('responses'), ['chat-E', 'chat-F']);
    assert.deepEqual(withCap('streaming'), [
      'chat-A',
      'chat-B',
      'chat-C',
      'chat-D',
      'chat-E',
      'chat-F',
      'chat-G',
    ]);
    assert.deepEqual(withCap('tools'), [
      'chat-A',
      'chat-B',
      'chat-C',
      'chat-D',
      'chat-E',
      'chat-F',
      'chat-G',
    ]);
    assert.equal(byId.get('chat-E')?.default_max_output_tokens, 65_536);
    assert.equal(byId.get('embed-model')?.dimensions, 4096);
    for (const m of models.filter((x) => x.kind === 'chat')) {
      assert.deepEqual(
        { type: m.engine.type, ttft: (m.engine as { ttft_ms?: number }).ttft_ms },
        { type: 'simulator', ttft: 0 },
      );
    }
    const engines = Object.fromEntries(
      models.filter((m) => m.kind !== 'chat').map((m) => [m.id, m.engine.type]),
    );
    assert.deepEqual(engines, {
      'embed-model': 'glove-sif',
      rerank: 'hybrid',
      'tts-model': 'embedded-tts',
      'stt-model': 'pocketsphinx',
      'image-model': 'simulator',
    });
  });

  it('rejects invalid catalogs with a readable message', () => {
    assert.throws(() => parseCatalog('models: []', 'x.yaml'), InvalidInputError);
    assert.throws(
      () => parseCatalog('models: [{id: a, kind: chat}]', 'x.yaml'),
      /x\.yaml is not a valid catalog/,
    );
    assert.throws(() => parseCatalog('models: [: :', 'x.yaml'), /not valid YAML/);
    const one = '{id: a, kind: chat, rank: 1, tiers: [premium], engine: {type: simulator}}';
    assert.throws(() => parseCatalog(`models: [${one}, ${one}]`, 'x.yaml'), /appears twice/);
  });
});

describe('CatalogRepository (PostgreSQL)', () => {
  let db: TestDatabase;
  let repos: Repositories;
  let tmp: string;

  before(async () => {
    db = await createTestDatabase();
    repos = createRepositories(db.url);
    tmp = await mkdtemp(join(tmpdir(), 'infer-catalog-'));
  });

  after(async () => {
    await repos?.close();
    await db?.drop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('syncs all 12 models from config/models.yaml and lists them most capable first', async () => {
    const r = await repos.catalog.syncFromFile(MODELS_YAML);
    assert.equal(r.upserted.length, 12);
    assert.deepEqual(r.disabled, []);
    const models = await repos.catalog.listEnabled();
    assert.deepEqual(
      models.map((m) => m.id),
      ORDER,
    );
    const byId = new Map(models.map((m) => [m.id, m]));
    assert.deepEqual(byId.get('chat-G')?.tiers, ['premium']);
    assert.deepEqual(byId.get('image-model')?.tiers, ['inference', 'premium']);
    assert.deepEqual(byId.get('chat-A')?.allowance, { tokens: 3_000_000_000, period: 'month' });
    assert.deepEqual(byId.get('chat-B')?.allowance, { tokens: 1_000_000_000, period: 'month' });
    assert.deepEqual(byId.get('chat-C')?.allowance, { tokens: 500_000_000, period: 'month' });
    assert.deepEqual(byId.get('chat-D')?.allowance, { tokens: 2_000_000_000, period: 'month' });
    assert.deepEqual(byId.get('chat-G')?.allowance, { tokens: 3_000_000_000, period: 'billing_period' });
    assert.equal(byId.get('chat-E')?.allowance, null);
    assert.equal(byId.get('embed-model')?.dimensions, 4096);
    assert.equal(byId.get('chat-E')?.default_max_output_tokens, 65_536);
    // What comes out of the database equals what the file says.
    const fromFile = await loadCatalogFile(MODELS_YAML);
    for (const entry of fromFile.models) assert.deepEqual(byId.get(entry.id), entry, entry.id);
    // Stored as columns too.
    const rows = await repos.db.$queryRawUnsafe<{ id: string; allowanceTokens: bigint; tiers: string[] }[]>(
      `SELECT "id", "allowanceTokens", "tiers"::text[] AS "tiers" FROM "Model" WHERE "id" = 'chat-G'`,
    );
    assert.equal(rows[0]?.allowanceTokens, 3_000_000_000n);
  });

  it('a second sync updates in place, disables models missing from the file and re-enables them later', async () => {
    const fromFile = await loadCatalogFile(MODELS_YAML);
    const subset = fromFile.models.filter((m) => m.id !== 'rerank' && m.id !== 'tts-model');
    const first = subset[0]!;
    subset[0] = { ...first, description: 'changed' };
    const file = join(tmp, 'subset.yaml');
    await writeFile(file, JSON.stringify({ models: subset }));
    const r = await repos.catalog.syncFromFile(file);
    assert.deepEqual(r.disabled, ['rerank', 'tts-model']);
    const enabled = await repos.catalog.listEnabled();
    assert.equal(enabled.length, 10);
    assert.equal(enabled.find((m) => m.id === first.id)?.description, 'changed');
    const all = await repos.catalog.listAll();
    assert.equal(all.length, 12);
    assert.equal(all.find((m) => m.entry.id === 'rerank')?.enabled, false);
    assert.equal((await repos.catalog.get('tts-model'))?.enabled, false);

    const again = await repos.catalog.syncFromFile(MODELS_YAML);
    assert.deepEqual(again.disabled, []);
    assert.equal((await repos.catalog.listEnabled()).length, 12);
  });

  it('an invalid file changes nothing', async () => {
    const file = join(tmp, 'bad.yaml');
    await writeFile(file, 'models:\n  - id: chat-A\n    kind: chat\n');
    await assert.rejects(repos.catalog.syncFromFile(file), InvalidInputError);
    await assert.rejects(repos.catalog.syncFromFile(join(tmp, 'missing.yaml')), /cannot read catalog file/);
    assert.equal((await repos.catalog.listEnabled()).length, 12);
  });
});
