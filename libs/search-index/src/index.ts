// @infer/search-index: the local web-search index (PostgreSQL full-text search over operator-ingested
// documents) and the preparation of documents for it. Used by apps/search-service (engine `local`,
// seeding, readable text of fetched pages), apps/admin-cli (`search ingest`, `search seed-docs`) and the
// gateway's admin ingest route.
export * from './documents.js';
export * from './files.js';
export * from './html.js';
export * from './repository.js';
export * from './seed.js';
