import pg from 'pg';

/** Where the platform's database lives unless DATABASE_URL says otherwise. */
export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/infer';

/** DATABASE_URL from the environment, or the default. */
export function databaseUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const url = env.DATABASE_URL?.trim();
  return url ? url : DEFAULT_DATABASE_URL;
}

/** Double-quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The database name of a postgres URL. */
export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!name) throw new Error(`database URL has no database name: ${redactUrl(url)}`);
  return name;
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

/** The URL with its password hidden, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<invalid url>';
  }
}

async function withMaintenanceClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  // `postgres` always exists; fall back to `template1` for servers without it.
  let lastError: unknown;
  for (const db of ['postgres', 'template1']) {
    const client = new pg.Client({ connectionString: withDatabase(url, db) });
    try {
      await client.connect();
    } catch (error) {
      lastError = error;
      await client.end().catch(() => undefined);
      continue;
    }
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }
  throw lastError;
}

/** Whether the URL's database exists (asked on the server's maintenance database). */
export async function databaseExists(url: string): Promise<boolean> {
  const name = databaseName(url);
  return withMaintenanceClient(url, async (client) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return Boolean(found.rowCount);
  });
}

/** Creates the URL's database if it does not exist. Returns true when it was created. */
export async function ensureDatabase(url: string): Promise<boolean> {
  const name = databaseName(url);
  return withMaintenanceClient(url, async (client) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
      return true;
    } catch (error) {
      // Someone else created it between our check and our CREATE: that is fine (42P04, or 23505 when
      // both CREATEs raced inside the catalog).
      const code = (error as { code?: string }).code;
      if (code === '42P04' || code === '23505') return false;
      throw error;
    }
  });
}

/** Drops the URL's database, closing its connections (tests). Returns true when it existed. */
export async function dropDatabase(url: string): Promise<boolean> {
  const name = databaseName(url);
  return withMaintenanceClient(url, async (client) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    return Boolean(found.rowCount);
  });
}
