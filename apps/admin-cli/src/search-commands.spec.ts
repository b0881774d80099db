import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createPrisma, type Db } from '@infer/persistence';
import { createTestDatabase, type TestDatabase } from '@infer/persistence/testing';
import { SearchDocumentsRepository } from '@infer/search-index';
import { type CliIo, run } from './cli.js';

describe('admin CLI: search commands (local index)', () => {
  let db: TestDatabase;
  let prisma: Db;
  let dir: string;
  const lines: { out: string[]; err: string[] } = { out: [], err: [] };
  const io: CliIo = { out: (l) => lines.out.push(l), err: (l) => lines.err.push(l) };
  const cli = async (...argv: string[]) => {
    lines.out.length = 0;
    lines.err.length = 0;
    return run(argv, io, { ...process.env, DATABASE_URL: db.url });
  };

  before(async () => {
    db = await createTestDatabase({ prefix: 'infer_search_cli' });
    prisma = createPrisma(db.url, { poolSize: 1 });
    dir = await mkdtemp(join(tmpdir(), 'search-cli-'));
    await mkdir(join(dir, 'kb', 'sub'), { recursive: true });
    await writeFile(
      join(dir, 'kb', 'guide.md'),
      '# Guide\n\nIntro.\n\n## Kangaroo care\n\nFeed the kangaroo.\n',
    );
    await writeFile(
      join(dir, 'kb', 'sub', 'page.html'),
      '<html><head><title>Koalas</title></head><body><p>Koalas sleep twenty hours a day.</p></body></html>',
    );
    await writeFile(
      join(dir, 'kb', 'docs.jsonl'),
      `${JSON.stringify({ url: 'https://wiki.example/emu', title: 'Emu', body: 'Emus run fast.', fetched_at: '2024-02-03' })}\n`,
    );
    await writeFile(join(dir, 'kb', 'image.png'), 'not indexed');
    await writeFile(join(dir, 'bad.json'), '[{"url": "nope", "body": "x"}]');
  });
  after(async () => {
    await prisma?.$disconnect();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('ingests a directory: Markdown sections, HTML text, JSONL documents; other files skipped', async () => {
    assert.equal(
      await cli('search', 'ingest', join(dir, 'kb'), '--base-url', 'https://kb.example/docs', '--json'),
      0,
    );
    const r = JSON.parse(lines.out.join('\n'));
    assert.equal(r.files, 3);
    assert.equal(r.skipped.length, 1);
    assert.equal(r.documents, 4);
    assert.equal(r.inserted, 4);
    const repo = new SearchDocumentsRepository(prisma);
    const hit = async (q: string) => (await repo.search({ query: q, limit: 1 }))[0];
    assert.equal((await hit('kangaroo'))?.url, 'https://kb.example/docs/guide.md#kangaroo-care');
    assert.equal((await hit('kangaroo'))?.source, 'kb.example');
    assert.equal((await hit('koalas sleep'))?.url, 'https://kb.example/docs/sub/page.html');
    assert.equal((await hit('koalas sleep'))?.title, 'Koalas');
    const emu = await hit('emus');
    assert.equal(emu?.url, 'https://wiki.example/emu');
    assert.equal(emu?.fetchedAt.toISOString(), '2024-02-03T00:00:00.000Z');

    assert.equal(await cli('search', 'ingest', join(dir, 'kb'), '--base-url', 'https://kb.example/docs'), 0);
    assert.match(lines.out.join('\n'), /0 new, 0 updated, 4 unchanged/);
  });

  it('reports bad input: a broken document (exit 1), a missing path (exit 1), bad usage (exit 2)', async () => {
    assert.equal(await cli('search', 'ingest', join(dir, 'bad.json')), 1);
    assert.match(lines.err.join('\n'), /bad\.json: document 0\.url: must be an absolute URL/);
    assert.equal(await cli('search', 'ingest', join(dir, 'nothing-here')), 1);
    assert.match(lines.err.join('\n'), /no such file or directory/);
    assert.equal(await cli('search', 'ingest'), 2);
    assert.equal(await cli('search', 'ingest', dir, '--base-url', 'not a url'), 2);
  });

  it('seeds the project documentation, shows stats and removes documents', async () => {
    const root = join(dir, 'proj');
    await mkdir(root);
    await writeFile(join(root, 'README.md'), '# Proj\n\nThe wallaby project.\n');
    assert.equal(await cli('search', 'seed-docs', root), 0);
    assert.match(lines.out.join('\n'), /seeded 1 section\(s\) of 1 file\(s\)/);
    assert.equal(await cli('search', 'stats', '--json'), 0);
    const stats = JSON.parse(lines.out.join('\n'));
    assert.equal(stats.documents, 5);
    assert.deepEqual(
      stats.sources.map((s: { source: string; documents: number }) => [s.source, s.documents]),
      [
        ['kb.example', 3],
        ['project-docs', 1],
        ['wiki.example', 1],
      ],
    );
    assert.equal(await cli('search', 'remove', 'https://wiki.example/emu', 'https://nope.example'), 0);
    assert.match(lines.out.join('\n'), /removed 1 document/);
  });
});
