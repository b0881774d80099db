// Test support (`@infer/persistence/testing`): a throw-away, migrated database per test file.
//   const db = await createTestDatabase();   // infer_test_<random>, migrated
//   ... db.url ...
//   await db.drop();                          // DROP DATABASE ... WITH (FORCE)
import { randomBytes } from 'node:crypto';
import { DEFAULT_DATABASE_URL, dropDatabase, ensureDatabase, withDatabase } from './database.js';
import { type DeployResult, type MigrateOptions, migrateDeploy } from './migrate/migrations.js';

export interface TestDatabase {
  name: string;
  url: string;
  /** Result of the deploy (null with migrate: false). */
  deploy: DeployResult | null;
  drop(): Promise<void>;
}

/**
 * Creates `infer_test_<random>` on the server of TEST_DATABASE_URL / DATABASE_URL (default: the local
 * server) and applies the migrations unless `migrate` is false.
 */
export async function createTestDatabase(
  options: { migrate?: boolean; prefix?: string } & MigrateOptions = {},
): Promise<TestDatabase> {
  const base = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const name = `${options.prefix ?? 'infer_test'}_${randomBytes(6).toString('hex')}`;
  const url = withDatabase(base, name);
  let deploy: DeployResult | null = null;
  if (options.migrate === false) await ensureDatabase(url);
  else deploy = await migrateDeploy(url, options);
  return {
    name,
    url,
    deploy,
    drop: async () => {
      await dropDatabase(url);
    },
  };
}
