// Prisma CLI configuration (Prisma 7). Only `prisma generate` is used from the Prisma CLI: it works
// offline as long as PRISMA_SCHEMA_ENGINE_BINARY names an existing file (the native schema engine is
// a download we cannot make; generate never runs it). Migrations go through tools/migrate.ts, which
// drives the wasm build of the schema engine (@prisma/schema-engine-wasm).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'prisma/config';

process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= fileURLToPath(import.meta.url);

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/infer' },
});
