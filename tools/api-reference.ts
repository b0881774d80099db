/**
 * Writes docs/api-reference.md from the OpenAPI document that libs/contracts builds (the same document
 * the gateway serves at /openapi.json and renders at /docs):
 *   node --conditions=source --import ./tools/ts-register.js tools/api-reference.ts
 * test/docs/api-reference.spec.ts fails when the committed page differs from what this writes.
 */
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument, renderReferenceMarkdown } from '@infer/contracts';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const API_REFERENCE_DOC = 'docs/api-reference.md';

export function renderApiReference(): string {
  return renderReferenceMarkdown(buildOpenApiDocument() as Record<string, unknown>);
}

if (process.argv[1] && relative(process.argv[1], fileURLToPath(import.meta.url)) === '') {
  writeFileSync(join(REPO_ROOT, API_REFERENCE_DOC), renderApiReference());
  console.log(`wrote ${API_REFERENCE_DOC}`);
}
