import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { ApiKeysRepository } from './api-keys.js';
import { inTransaction } from './db.js';
import { prismaErrorCode } from './errors.js';
import { lazyPrisma, prismaLoaded } from './lazy-db.js';
import { MembersRepository } from './members.js';
import { createPgPool } from './pg-pool.js';
import { createPrisma } from './prisma.js';
import { createTestDatabase, type TestDatabase } from './testing.js';

/** Runs `code` (an ES module) in a fresh node with bench/stack/module-watch.mjs; its stdout and watch lines. */
function runWatched(code: string, env: NodeJS.ProcessEnv): Promise<{ out: string; watched: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--conditions=source',
        '--import',
        './tools/ts-register.js',
        '--import',
        './bench/stack/module-watch.mjs',
        '--input-type=module',
        '-e',
        code,
      ],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (status) => {
      if (status !== 0) reject(new Error(`exit ${status}: ${err}`));
      else resolve({ out, watched: err.split('\n').filter((l) => l.startsWith('module-watch: ')) });
    });
  });
}

describe('lazyPrisma: Prisma client made on first use', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  before(async () => {
    db = await createTestDatabase();
    pool = createPgPool(db.url);
  });

  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('makes nothing until a call is awaited, then runs it on the shared pool', async () => {
    let loads = 0;
    const lazy = lazyPrisma(pool, { onLoad: () => loads++ });
    // Repositories take it as they take a client; a call not awaited runs nothing, as a PrismaPromise.
    const members = new MembersRepository(lazy.db);
    const pending = lazy.db.member.count();
    assert.ok('$transaction' in lazy.db);
    assert.equal(lazy.loaded(), false);
    assert.equal(prismaLoaded(lazy.db), false);
    assert.equal(loads, 0);
    const m = await members.create({ name: 'lazy', tier: 'community' });
    assert.equal(lazy.loaded(), true);
    assert.equal(prismaLoaded(lazy.db), true);
    assert.equal(await pending, 1);
    assert.equal(await lazy.db.member.count(), 1);
    assert.equal(loads, 1);
    // Tagged raw queries, before and after the load alike.
    const rows = await lazy.db.$queryRaw<{ n: number }[]>`SELECT ${41}::int + 1 AS n`;
    assert.deepEqual(rows, [{ n: 42 }]);
    await lazy.db.member.delete({ where: { id: m.id } });
    await lazy.close();
    // The pool is the caller's: still open.
    assert.equal((await pool.query('SELECT 1 AS one')).rows[0].one, 1);
    assert.equal(prismaLoaded(createPrisma(db.url)), true);
  });

  it("$transaction([...]) of calls made before the load is Prisma's batch: atomic, with Prisma's error", async () => {
    const lazy = lazyPrisma(pool);
    const calls = [
      lazy.db.member.create({ data: { name: 'a', email: 'same@example.com', tier: 'community' } }),
      lazy.db.member.create({ data: { name: 'b', email: 'same@example.com', tier: 'community' } }),
    ];
    assert.equal(lazy.loaded(), false);
    const error = await lazy.db.$transaction(calls).then(
      () => null,
      (e: unknown) => e,
    );
    assert.equal(prismaErrorCode(error), 'P2002');
    assert.equal((error as Error).constructor.name, 'PrismaClientKnownRequestError');
    assert.equal(await lazy.db.member.count({ where: { email: 'same@example.com' } }), 0);
    // The batch form after the load, and a call made before it mixed in.
    const early = lazyPrisma(pool);
    const before = early.db.member.create({ data: { name: 'c', tier: 'community' } });
    await early.db.member.count();
    const [created, count] = await early.db.$transaction([before, early.db.member.count()]);
    assert.equal(created.name, 'c');
    assert.equal(count, 1);
    await early.db.member.deleteMany({});
    await lazy.close();
    await early.close();
  });

  it('interactive transactions and inTransaction roll back on a throw', async () => {
    const lazy = lazyPrisma(pool);
    const keys = new ApiKeysRepository(lazy.db);
    await assert.rejects(
      inTransaction(lazy.db, async (tx) => {
        const m = await new MembersRepository(tx).create({ name: 'tx', tier: 'premium' });
        await new ApiKeysRepository(tx).mint(m.id);
        throw new Error('undo');
      }),
      /undo/,
    );
    assert.equal(await lazy.db.member.count(), 0);
    assert.deepEqual(await keys.list(), []);
    await lazy.close();
  });

  it("@infer/persistence/lazy loads none of Prisma's client, runtime or compiler; the first query does", async () => {
    const { out, watched } = await runWatched(
      `import { createPgPool, lazyPrisma, listEnabledModels, usageTotal } from '@infer/persistence/lazy';
       const pool = createPgPool(process.env.LAZY_DB_URL);
       const lazy = lazyPrisma(pool);
       await listEnabledModels(pool);
       await usageTotal(pool, { unit: 'tokens', from: new Date(0), to: new Date() });
       process.stderr.write('module-watch: -- first query --\\n');
       await lazy.db.member.count();
       await lazy.close();
       await pool.end();
       console.log('done');`,
      { LAZY_DB_URL: db.url },
    );
    assert.equal(out.trim(), 'done');
    const mark = watched.indexOf('module-watch: -- first query --');
    assert.ok(mark >= 0, watched.join('\n'));
    // Only the 70 KB helpers of sql-tag.ts (Prisma.sql ...) before it: no client, runtime or compiler.
    assert.deepEqual(
      watched.slice(0, mark).filter((l) => !l.includes('@prisma/client-runtime-utils/')),
      [],
    );
    const loaded = watched.slice(mark + 1).join('\n');
    assert.match(loaded, /generated\/prisma\/client\./);
    assert.match(loaded, /@prisma\/client\/runtime\/client/);
  });
});
