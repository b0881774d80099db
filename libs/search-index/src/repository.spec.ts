import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createPrisma, type Db } from '@infer/persistence';
import { createTestDatabase, type TestDatabase } from '@infer/persistence/testing';
import type { SearchDocumentInput } from './documents.js';
import { PROJECT_DOCS_SOURCE } from './files.js';
import { SearchDocumentsRepository, uuidv7 } from './repository.js';
import { seedProjectDocs } from './seed.js';

const doc = (
  url: string,
  title: string,
  body: string,
  fetchedAt: string,
  source = 'test',
): SearchDocumentInput => ({
  url,
  title,
  body,
  source,
  fetchedAt: new Date(fetchedAt),
});

describe('SearchDocumentsRepository (PostgreSQL full-text search)', () => {
  let db: TestDatabase;
  let prisma: Db;
  let repo: SearchDocumentsRepository;
  before(async () => {
    db = await createTestDatabase({ prefix: 'infer_search_index' });
    prisma = createPrisma(db.url, { poolSize: 2 });
    repo = new SearchDocumentsRepository(prisma);
    await repo.upsertMany([
      doc(
        'https://a.example/llamas',
        'Llamas of the Andes',
        'Llamas are camelids that carry loads in the mountains.',
        '2024-01-10T00:00:00Z',
      ),
      doc(
        'https://b.example/alpaca',
        'Alpaca wool',
        'Alpacas are kept for their fleece; a llama guards the herd.',
        '2024-06-01T00:00:00Z',
      ),
      doc(
        'https://c.example/kafka',
        'Kafka streams',
        'A distributed log for events. Nothing about animals.',
        '2024-06-02T00:00:00Z',
      ),
    ]);
  });
  after(async () => {
    await prisma?.$disconnect();
    await db?.drop();
  });

  it('finds documents by stemmed words, title matches first, with a plain-text snippet', async () => {
    const hits = await repo.search({ query: 'llama', limit: 10 });
    assert.deepEqual(
      hits.map((h) => h.url),
      ['https://a.example/llamas', 'https://b.example/alpaca'],
    );
    assert.ok(hits[0]!.rank >= hits[1]!.rank);
    assert.match(hits[0]!.snippet, /camelids/);
    assert.equal(hits[0]!.snippet.includes('<b>'), false);
    assert.equal(hits[0]!.body, undefined);
  });

  it('takes web search syntax: phrases, exclusions, or', async () => {
    const urls = async (query: string) => (await repo.search({ query, limit: 10 })).map((h) => h.url).sort();
    assert.deepEqual(await urls('"carry loads"'), ['https://a.example/llamas']);
    assert.deepEqual(await urls('llama -fleece'), ['https://a.example/llamas']);
    assert.deepEqual(await urls('kafka or alpaca'), ['https://b.example/alpaca', 'https://c.example/kafka']);
    assert.deepEqual(await urls('the of a'), [], 'stop words only: no match, no error');
    assert.deepEqual(await urls('zebra'), []);
  });

  it('limits, filters by date window and returns bodies on request', async () => {
    assert.equal((await repo.search({ query: 'llama', limit: 1 })).length, 1);
    const june = await repo.search({
      query: 'llama or kafka',
      limit: 10,
      since: new Date('2024-06-01T00:00:00Z'),
      until: new Date('2024-06-02T00:00:00Z'),
      withBody: true,
    });
    assert.deepEqual(
      june.map((h) => h.url),
      ['https://b.example/alpaca'],
    );
    assert.match(june[0]!.body ?? '', /fleece/);
  });

  it('upserts by url and counts inserted, updated and unchanged', async () => {
    const base = doc('https://d.example/x', 'Zebras', 'Striped horses.', '2024-01-01T00:00:00Z');
    assert.deepEqual(await repo.upsertMany([base]), { inserted: 1, updated: 0, unchanged: 0 });
    assert.deepEqual(await repo.upsertMany([base]), { inserted: 0, updated: 0, unchanged: 1 });
    const changed = { ...base, body: 'Striped horses of Africa.' };
    assert.deepEqual(await repo.upsertMany([changed, changed]), { inserted: 0, updated: 1, unchanged: 0 });
    const hits = await repo.search({ query: 'africa', limit: 5 });
    assert.deepEqual(
      hits.map((h) => h.url),
      ['https://d.example/x'],
    );
    assert.equal(await repo.deleteUrls(['https://d.example/x', 'https://nope.example']), 1);
    assert.equal(await repo.count(), 3);
  });

  it('seeds the project documentation and replaces it on re-seed', async () => {
    const root = await mkdtemp(join(tmpdir(), 'seed-'));
    try {
      await writeFile(
        join(root, 'README.md'),
        '# Proj\n\nIntro words.\n\n## Setup\n\nRun the quokka installer.\n',
      );
      await mkdir(join(root, 'docs', 'adr'), { recursive: true });
      await writeFile(join(root, 'docs', 'adr', '0001-x.md'), '# ADR one\n\nWe chose wombats.\n');
      await mkdir(join(root, 'apps', 'svc'), { recursive: true });
      await writeFile(join(root, 'apps', 'svc', 'README.md'), '# svc\n\nA numbat service.\n');
      const first = await seedProjectDocs(repo, root);
      assert.equal(first.files, 3);
      assert.equal(first.documents, 4);
      assert.equal(first.inserted, 4);
      const hit = (await repo.search({ query: 'quokka', limit: 5 }))[0];
      assert.equal(hit?.url, 'docs:/README.md#setup');
      assert.equal(hit?.title, 'Proj: Setup');
      assert.equal(hit?.source, PROJECT_DOCS_SOURCE);
      assert.equal((await repo.search({ query: 'numbat', limit: 5 }))[0]?.url, 'docs:/apps/svc/README.md');

      await writeFile(join(root, 'README.md'), '# Proj\n\nIntro words.\n');
      const second = await seedProjectDocs(repo, root);
      assert.equal(second.deleted, 1, 'the vanished section is removed');
      assert.equal(second.unchanged, 2);
      assert.equal(await repo.count(PROJECT_DOCS_SOURCE), 3);
      assert.equal(await repo.count('test'), 3, 'other sources untouched');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('makes time-ordered UUIDv7 ids', () => {
    const a = uuidv7(1_700_000_000_000);
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.ok(uuidv7(1_700_000_000_001) > a);
  });
});
