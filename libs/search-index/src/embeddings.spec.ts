import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPrisma, type Db } from '@infer/persistence';
import { createTestDatabase, type TestDatabase } from '@infer/persistence/testing';
import { decodeVector, encodeVector, SearchDocumentsRepository } from './repository.js';

const at = new Date('2025-01-01T00:00:00Z');
const doc = (url: string, title: string, body: string) => ({ url, title, body, source: 't', fetchedAt: at });

describe('SearchDocumentsRepository: stored vectors and hybrid candidates', () => {
  let db: TestDatabase;
  let prisma: Db;
  let repo: SearchDocumentsRepository;
  before(async () => {
    db = await createTestDatabase({ prefix: 'infer_search_vectors' });
    prisma = createPrisma(db.url, { poolSize: 2 });
    repo = new SearchDocumentsRepository(prisma);
    await repo.upsertMany([
      doc('https://x/cars', 'Used cars', 'An automobile dealer sells used vehicles.'),
      doc('https://x/fruit', 'Fruit', 'Bananas and apples are sold at the market.'),
      doc('https://x/loans', 'Loans', 'The bank gives loans to buy a house.'),
    ]);
  });
  after(async () => {
    await prisma?.$disconnect();
    await db?.drop();
  });

  it('round-trips float32 vectors', () => {
    const v = new Float32Array([0.5, -1.25, 3e-8, 1]);
    assert.deepEqual(decodeVector(encodeVector(v)), v);
  });

  it('lists documents without a vector of the model, stores vectors, and forgets them when the text changes', async () => {
    assert.equal((await repo.missingEmbeddings('m1', 10)).length, 3);
    const rows = await repo.missingEmbeddings('m1', 10);
    const n = await repo.setEmbeddings(
      'm1',
      rows.map((r, i) => ({ url: r.url, body: r.body, vector: new Float32Array([i, 1, 2]) })),
    );
    assert.equal(n, 3);
    assert.equal((await repo.missingEmbeddings('m1', 10)).length, 0);
    assert.equal((await repo.missingEmbeddings('m2', 10)).length, 3, 'another model: all missing');
    // A vector made from an outdated text is not stored.
    assert.equal(
      await repo.setEmbeddings('m1', [
        { url: 'https://x/cars', body: 'old text', vector: new Float32Array(3) },
      ]),
      0,
    );
    await repo.upsertMany([
      doc('https://x/cars', 'Used cars', 'An automobile dealer sells used and new vehicles.'),
    ]);
    assert.deepEqual(
      (await repo.missingEmbeddings('m1', 10)).map((r) => r.url),
      ['https://x/cars'],
    );
  });

  it('finds candidates matching any word of the query (recall), with their stored vectors', async () => {
    const c = await repo.candidates({ query: 'where to buy used cars', limit: 10, model: 'm1' });
    const urls = c.map((h) => h.url).sort();
    assert.deepEqual(urls, ['https://x/cars', 'https://x/loans'], 'any word: "used"/"cars" and "buy"');
    const loans = c.find((h) => h.url === 'https://x/loans');
    assert.ok(loans?.embedding instanceof Float32Array && loans.embedding.length === 3);
    assert.equal(c.find((h) => h.url === 'https://x/cars')?.embedding, null, 'its text changed: no vector');
    assert.ok(c.every((h) => h.body.length > 0 && h.snippet.length > 0));
    const excl = await repo.candidates({ query: 'buy -house', limit: 10, model: 'm1' });
    assert.deepEqual(excl, [], 'an exclusion keeps the web-search semantics');
  });
});
