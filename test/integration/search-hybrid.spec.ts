/**
 * The local search index ranked by the hybrid of full-text rank and vectors from the embedding service
 * (SEARCH_HYBRID, the default): documents ingested through the admin API get their vectors stored by
 * the search-service's backfill, and a question that shares only a common word with the answer finds
 * it first. The embedding-service runs with the default catalog (embed-model: glove-sif).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { SearchResponseSchema } from '@infer/contracts';
import { seedProjectDocs } from '@infer/search-index';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { type SearchService, startSearchService } from '../../apps/search-service/src/app.js';
import { type Stack, startStack } from './harness.js';

const ADMIN_TOKEN = 'search-hybrid-admin-token-0123456789';

describe('local search, hybrid ranking with stored vectors', () => {
  let stack: Stack;
  let svc: SearchService;
  let modelPrefix = '';
  const prefix = `test.${randomUUID()}.`;

  before(async () => {
    stack = await startStack({
      env: { SEARCH_SUBJECT_PREFIX: prefix, LIMITS_ENABLED: '0', ADMIN_TOKEN },
      services: [
        (env) => {
          modelPrefix = env.MODEL_SUBJECT_PREFIX ?? '';
          return startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX });
        },
      ],
    });
    svc = await startSearchService({
      env: {
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        LOG_LEVEL: 'silent',
        SEARCH_CACHE_PREFIX: `test:search:${randomUUID()}`,
        SEARCH_SEED_ON_START: '0',
        SEARCH_EMBED_INTERVAL_MS: '200',
      },
      subjectPrefix: prefix,
      embeddingSubjectPrefix: modelPrefix,
    });
  });
  after(async () => {
    await svc?.stop();
    await stack?.close();
  });

  const post = async (path: string, body: unknown, auth: string) => {
    const res = await fetch(`${stack.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${auth}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('stores a vector with every ingested document, then ranks by meaning among full-text candidates', async () => {
    const docs = [
      ['fruit', 'Fruit market', 'Buy fresh bananas, apples and pears at the market every morning.'],
      [
        'cars',
        'Used car dealer',
        'We sell cheap used cars and trucks: buy a vehicle today, financing available.',
      ],
      ['loans', 'Home loans', 'The bank helps you buy a house with a mortgage at a fixed rate.'],
      ['shoes', 'Shoe shop', 'Buy running shoes and boots for the whole family.'],
    ].map(([id, title, body]) => ({
      url: `https://shop.example/${id}`,
      title,
      body,
      fetched_at: '2025-05-01T00:00:00Z',
    }));
    const r = await post('/admin/search/documents', { documents: docs }, ADMIN_TOKEN);
    assert.equal(r.status, 200, JSON.stringify(r.body));

    // The backfill embeds them shortly after ingest (poll with a deadline).
    const deadline = Date.now() + 20_000;
    let missing = await svc.repo.missingEmbeddings('embed-model', 10);
    while (missing.length && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, 100));
      missing = await svc.repo.missingEmbeddings('embed-model', 10);
    }
    assert.deepEqual(missing, [], 'every document has a vector of embed-model');
    const rows = await stack.prisma.$queryRaw<{ n: bigint; bytes: number }[]>`
      SELECT count(*) AS n, min(octet_length("embedding")) AS bytes FROM "SearchDocument"
      WHERE "embeddingModel" = 'embed-model'`;
    assert.equal(Number(rows[0]?.n), 4);
    assert.equal(rows[0]?.bytes, 4096 * 4, '4096 float32 values');

    // Every document shares only "buy" with the question; the vectors pick the car dealer.
    const res = await post(
      '/v1/search',
      { query: 'where can I buy an automobile', count: 4 },
      stack.keys.inference,
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const found = SearchResponseSchema.parse(res.body).results.map((x) => x.url);
    assert.equal(found[0], 'https://shop.example/cars', found.join(', '));
    assert.equal(found.length, 4, 'full-text recall on any word');
  });

  it('changing a document drops its vector, and the backfill makes a new one from the new text', async () => {
    const stored = async () =>
      (
        await stack.prisma.$queryRaw<{ v: string | null }[]>`
          SELECT encode("embedding", 'base64') AS v FROM "SearchDocument" WHERE "url" = 'https://shop.example/fruit'`
      )[0]?.v ?? null;
    const before = await stored();
    assert.ok(before);
    const doc = {
      url: 'https://shop.example/fruit',
      title: 'Fruit market',
      body: 'Oranges and lemons, grapes and melons.',
      fetched_at: '2025-05-02T00:00:00Z',
    };
    assert.equal((await post('/admin/search/documents', { documents: [doc] }, ADMIN_TOKEN)).status, 200);
    const deadline = Date.now() + 20_000;
    let now = await stored();
    while ((now === null || now === before) && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, 100));
      now = await stored();
    }
    assert.ok(now && now !== before, 'a new vector for the new text');
  });

  it("setup's printed example: 'quick start' finds the README's Quick start section first, vectors and all", async () => {
    // What a fresh setup's index holds: the project documentation (`search seed-docs`), every section embedded.
    const seeded = await seedProjectDocs(svc.repo, process.cwd());
    assert.ok(seeded.documents > 50, `${seeded.documents} sections`);
    const deadline = Date.now() + 120_000;
    let missing = await svc.repo.missingEmbeddings('embed-model', 10);
    while (missing.length && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, 200));
      missing = await svc.repo.missingEmbeddings('embed-model', 10);
    }
    assert.deepEqual(missing, [], 'every section has a vector');
    // The query scripts/start.sh prints.
    const printed = /JSON\.stringify\(\{query: '([^']+)'\}\)/.exec(
      readFileSync('scripts/start.sh', 'utf8'),
    )?.[1];
    assert.ok(printed, "start.sh's search example");
    const res = await post('/v1/search', { query: printed }, stack.keys.inference);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const found = SearchResponseSchema.parse(res.body).results;
    assert.equal(found[0]?.url, 'docs:/README.md#quick-start', found.map((x) => x.url).join(', '));
  });
});
