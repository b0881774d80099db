// Drives the wasm build of Prisma's schema engine (@prisma/schema-engine-wasm) through the pg driver
// adapter, so migrations can be created and applied without the native engine (a download we cannot
// make; docs/platform-notes.md, "Prisma offline"). The wasm API is internal to Prisma: the package version is
// pinned exactly in package.json.
//
// Three snags of the stock adapter are worked around here:
//  1. the engine reads catalog columns of Postgres's internal `"char"` type (OID 18), which
//     adapter-pg refuses: the column type is mapped to text (OID 25) before the adapter sees it;
//  2. adapter-pg's executeScript splits a script on every `;`, which breaks `$$ ... $$` function
//     bodies in hand-written SQL: scripts are sent whole (simple query protocol, one implicit
//     transaction, like the native engine does);
//  3. adapter-pg drops its shadow database before closing the shadow pool (the DROP fails while
//     connections are open): our shadow database is dropped WITH (FORCE) after its pool has ended.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import type * as Wasm from '@prisma/schema-engine-wasm';
import pg from 'pg';
import { quoteIdent, withDatabase } from '../database.js';

export type { Wasm };

interface WasmBindings {
  SchemaEngine: typeof Wasm.SchemaEngine;
  version(): string;
  __wbg_set_wasm(exports: Record<string, unknown>): void;
}

// The WebAssembly global is not in the ES2023 + node typings this repo compiles with.
const { WebAssembly: WA } = globalThis as unknown as {
  WebAssembly: {
    instantiate(
      bytes: Uint8Array,
      imports: Record<string, Record<string, unknown>>,
    ): Promise<{ instance: { exports: Record<string, unknown> } }>;
  };
};

let bindings: Promise<WasmBindings> | undefined;

/** Loads and instantiates the wasm module once per process (read and instantiated by hand: importing a .wasm file as a module still needs a flag on Node 24). */
export function loadSchemaEngineWasm(): Promise<WasmBindings> {
  bindings ??= (async () => {
    const require = createRequire(import.meta.url);
    const gluePath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
    const glue = (await import('@prisma/schema-engine-wasm/schema_engine_bg')) as unknown as WasmBindings;
    const bytes = await readFile(join(dirname(gluePath), 'schema_engine_bg.wasm'));
    const { instance } = await WA.instantiate(bytes, {
      './schema_engine_bg.js': glue as unknown as Record<string, unknown>,
    });
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as (() => void) | undefined)?.();
    return glue;
  })();
  return bindings;
}

// The adapter's query object: just enough of adapter-pg's internals to patch them.
interface PgResultLike {
  fields: { dataTypeID: number }[];
}
interface PatchableQueryable {
  performIO(query: unknown): Promise<PgResultLike>;
  executeScript(script: string): Promise<void>;
  startTransaction?(isolationLevel?: string): Promise<PatchableQueryable>;
  client: { query(sql: string): Promise<unknown> };
  onError(error: unknown): never;
  dispose(): Promise<void>;
}

const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;

function patchQueryable<T>(target: T): T {
  const q = target as unknown as PatchableQueryable;
  const performIO = q.performIO.bind(q);
  q.performIO = async (query) => {
    const result = await performIO(query);
    for (const field of result?.fields ?? [])
      if (field.dataTypeID === PG_CHAR_OID) field.dataTypeID = PG_TEXT_OID;
    return result;
  };
  q.executeScript = async (script) => {
    try {
      await q.client.query(script);
    } catch (error) {
      q.onError(error);
    }
  };
  if (q.startTransaction) {
    const startTransaction = q.startTransaction.bind(q);
    q.startTransaction = async (isolationLevel) => patchQueryable(await startTransaction(isolationLevel));
  }
  return target;
}

/**
 * A migration-aware driver adapter factory for the wasm engine, on adapter-pg with the snags fixed.
 * `disposeAll()` closes every pool it opened and drops leftover shadow databases.
 */
export function createMigrationAdapterFactory(databaseUrl: string) {
  const inner = new PrismaPg({ connectionString: databaseUrl });
  const open = new Set<{ dispose(): Promise<void> }>();
  const track = <T extends { dispose(): Promise<void> }>(adapter: T): T => {
    const dispose = adapter.dispose.bind(adapter);
    let done = false;
    adapter.dispose = async () => {
      if (done) return;
      done = true;
      open.delete(adapter);
      await dispose();
    };
    open.add(adapter);
    return adapter;
  };

  const factory = {
    provider: inner.provider,
    adapterName: inner.adapterName,
    async connect() {
      return track(patchQueryable(await inner.connect()));
    },
    async connectToShadowDb() {
      const shadowName = `prisma_migrate_shadow_db_${randomUUID().replaceAll('-', '')}`;
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${quoteIdent(shadowName)}`);
      } finally {
        await admin.end();
      }
      const shadow = new PrismaPg({ connectionString: withDatabase(databaseUrl, shadowName) });
      const adapter = patchQueryable(await shadow.connect());
      const dispose = adapter.dispose.bind(adapter);
      adapter.dispose = async () => {
        await dispose(); // ends the shadow pool first ...
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        try {
          await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(shadowName)} WITH (FORCE)`); // ... then drops
        } finally {
          await client.end();
        }
      };
      return track(adapter);
    },
  };
  return {
    factory: bindMigrationAwareSqlAdapterFactory(factory as never),
    async disposeAll() {
      for (const adapter of [...open]) await adapter.dispose().catch(() => undefined);
    },
  };
}

export interface EngineLogLine {
  level: string;
  fields?: { message?: string } & Record<string, unknown>;
  target?: string;
}

/** A schema engine bound to one database and one schema; `close()` frees it and its connections. */
export async function openSchemaEngine(
  databaseUrl: string,
  schema: { path: string; content: string },
  onLog?: (line: EngineLogLine) => void,
) {
  const wasm = await loadSchemaEngineWasm();
  const adapters = createMigrationAdapterFactory(databaseUrl);
  const log = (raw: string) => {
    if (!onLog) return;
    try {
      onLog(JSON.parse(raw) as EngineLogLine);
    } catch {
      onLog({ level: 'INFO', fields: { message: String(raw) } });
    }
  };
  let engine: Wasm.SchemaEngine;
  try {
    engine = await wasm.SchemaEngine.new(
      { datamodels: [[schema.path, schema.content]] },
      log,
      adapters.factory,
    );
  } catch (error) {
    await adapters.disposeAll();
    throw error;
  }
  return {
    engine,
    version: wasm.version(),
    async close() {
      try {
        engine.free();
      } finally {
        await adapters.disposeAll();
      }
    },
  };
}
export type OpenSchemaEngine = Awaited<ReturnType<typeof openSchemaEngine>>;
