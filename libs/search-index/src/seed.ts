import { PROJECT_DOCS_SOURCE, projectDocFiles, projectDocuments } from './files.js';
import type { SearchDocumentsRepository, UpsertResult } from './repository.js';

export interface SeedResult extends UpsertResult {
  files: number;
  documents: number;
  deleted: number;
}

/**
 * (Re)loads the project's own documentation from `root` into the index as source `project-docs`:
 * changed sections are updated, new ones added, vanished ones deleted. Idempotent.
 */
export async function seedProjectDocs(repo: SearchDocumentsRepository, root: string): Promise<SeedResult> {
  const files = await projectDocFiles(root);
  const docs = await projectDocuments(root);
  const r = await repo.replaceSource(PROJECT_DOCS_SOURCE, docs);
  return { ...r, files: files.length, documents: docs.length };
}
