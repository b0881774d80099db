import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { databaseExists, dropDatabase } from '../database.js';
import { createTestDatabase, type TestDatabase } from '../testing.js';
import { usagePartitionName } from '../usage-partitions.js';
import {
  createMigration,
  DEFAULT_MIGRATIONS_DIR,
  DEFAULT_SCHEMA_PATH,
  migrateDeploy,
  migrateStatus,
} from './migrations.js';

async function query<R extends Record<string, unknown>>(url: string, sql: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

async function shadowDatabases(url: string): Promise<string[]> {
  const rows = await query<{ datname: string }>(
    url.replace(/\/[^/]*$/, '/postgres'),
    `SELECT datname FROM pg_database WHERE datname LIKE 'prisma_migrate_shadow_db_%'`,
  );
  return rows.map((r) => r.datname);
}

describe('migrations (wasm schema engine)', () => {
  let db: TestDatabase;
  let tmp: string;

  before(async () => {
    // An empty database name that does not exist yet: deploy must create it.
    db = await createTestDatabase({ migrate: false });
    await dropDatabase(db.url);
    tmp = await mkdtemp(join(tmpdir(), 'infer-migrate-'));
  });

  after(async () => {
    await db?.drop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('status before deploy: database missing, every migration pending', async () => {
    const s = await migrateStatus(db.url);
    assert.equal(s.databaseExists, false);
    assert.equal(s.upToDate, false);
    assert.ok(s.pending.length >= 1);
    assert.match(s.pending[0]!, /^\d{14}_init$/);
  });

  it('deploy creates the database and applies every migration', async () => {
    const r = await migrateDeploy(db.url);
    assert.equal(r.createdDatabase, true);
    const folders = (await readdir(DEFAULT_MIGRATIONS_DIR, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    assert.deepEqual(r.applied, folders);
    assert.ok(await databaseExists(db.url));
    const rows = await query<{ migration_name: string; finished_at: Date | null }>(
      db.url,
      'SELECT migration_name, finished_at FROM _prisma_migrations ORDER BY migration_name',
    );
    assert.deepEqual(
      rows.map((r) => r.migration_name),
      folders,
    );
    assert.ok(rows.every((r) => r.finished_at));
    const tables = await query<{ tablename: string }>(
      db.url,
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`,
    );
    const names = tables.map((t) => t.tablename);
    for (const t of ['Member', 'ApiKey', 'Model', 'UsageEvent_default'])
      assert.ok(names.includes(t), `table ${t}`);
  });

  it('the usage ledger is partitioned by month, with this month and the next two present', async () => {
    const [kind] = await query<{ relkind: string }>(
      db.url,
      `SELECT relkind::text FROM pg_class WHERE relname = 'UsageEvent'`,
    );
    assert.equal(kind?.relkind, 'p');
    const parts = await query<{ name: string }>(
      db.url,
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'UsageEvent' ORDER BY 1`,
    );
    const now = new Date();
    const expected = [0, 1, 2].map((i) =>
      usagePartitionName(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + i, 1))),
    );
    for (const name of [...expected, 'UsageEvent_default']) {
      assert.ok(
        parts.some((p) => p.name === name),
        `partition ${name}`,
      );
    }
  });

  it('deploy again is a no-op', async () => {
    const r = await migrateDeploy(db.url);
    assert.equal(r.createdDatabase, false);
    assert.deepEqual(r.applied, []);
  });

  it('status after deploy: up to date, with applied times', async () => {
    const s = await migrateStatus(db.url);
    assert.equal(s.databaseExists, true);
    assert.equal(s.hasMigrationsTable, true);
    assert.equal(s.upToDate, true);
    assert.deepEqual(s.pending, []);
    assert.ok(s.migrations.every((m) => m.appliedAt));
  });

  it('create: the committed migrations match schema.prisma (no new migration)', async () => {
    const dir = join(tmp, 'same');
    await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
    const shadowsBefore = await shadowDatabases(db.url);
    const r = await createMigration(db.url, 'nothing', { migrationsDir: dir });
    assert.equal(r.name, null);
    assert.deepEqual(await shadowDatabases(db.url), shadowsBefore, 'shadow database dropped');
  });

  it('create writes a migration for a schema change; deploy applies it; status sees pending/edited', async () => {
    const dir = join(tmp, 'changed');
    await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
    const schemaPath = join(tmp, 'schema.prisma');
    const schema = await readFile(DEFAULT_SCHEMA_PATH, 'utf8');
    await writeFile(
      schemaPath,
      schema.replace(/(Per-key overrides of rate limits[^\n]*\n {2}limits\s+Json\?)/, '$1\n  note String?'),
    );
    const shadowsBefore = await shadowDatabases(db.url);
    const r = await createMigration(db.url, 'add_note', { migrationsDir: dir, schemaPath });
    assert.match(r.name ?? '', /^\d{14}_add_note$/);
    assert.match(r.script ?? '', /ALTER TABLE "ApiKey" ADD COLUMN\s+"note" TEXT/);
    assert.match(await readFile(join(dir, 'migration_lock.toml'), 'utf8'), /provider = "postgresql"/);

    const pending = await migrateStatus(db.url, { migrationsDir: dir, schemaPath });
    assert.deepEqual(pending.pending, [r.name]);
    assert.equal(pending.upToDate, false);

    const applied = await migrateDeploy(db.url, { migrationsDir: dir, schemaPath });
    assert.deepEqual(applied.applied, [r.name]);
    const cols = await query<{ column_name: string }>(
      db.url,
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'ApiKey' AND column_name = 'note'`,
    );
    assert.equal(cols.length, 1);

    await writeFile(r.path!, `${r.script}\n-- edited after apply\n`);
    const edited = await migrateStatus(db.url, { migrationsDir: dir, schemaPath });
    assert.deepEqual(edited.edited, [r.name]);
    assert.equal(edited.upToDate, false);
    assert.deepEqual(await shadowDatabases(db.url), shadowsBefore, 'shadow database dropped');
  });

  it('a failing migration is reported, recorded as failed, and leaves nothing half-applied', async () => {
    const other = await createTestDatabase({ migrate: false });
    try {
      const dir = join(tmp, 'failing');
      await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
      const bad = join(dir, '29991231000000_broken');
      await mkdir(bad);
      await writeFile(
        join(bad, 'migration.sql'),
        'CREATE TABLE "Broken" (id int);\nSELECT * FROM no_such_table;\n',
      );
      await assert.rejects(migrateDeploy(other.url, { migrationsDir: dir }), /no_such_table/);
      const s = await migrateStatus(other.url, { migrationsDir: dir });
      assert.deepEqual(s.failed, ['29991231000000_broken']);
      assert.equal(s.upToDate, false);
      // The script ran as one implicit transaction: its first statement was rolled back too.
      const t = await query(other.url, `SELECT 1 FROM pg_tables WHERE tablename = 'Broken'`);
      assert.equal(t.length, 0);
    } finally {
      await other.drop();
    }
  });
});
