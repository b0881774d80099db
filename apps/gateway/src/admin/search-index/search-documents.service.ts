import { ApiError, parseOrThrow } from '@infer/contracts';
import {
  DocumentBatchSchema,
  prepareDocument,
  type SearchDocumentInput,
  SearchDocumentsRepository,
} from '@infer/search-index';
import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import { AdminAccess, type AdminActor } from '../access/admin-access.service.js';

const DeleteBodySchema = z.object({
  urls: z
    .array(
      z
        .string()
        .min(1)
        // No stored URL holds one (PostgreSQL text cannot): a 400, not a failed query.
        .refine((u) => !u.includes('\u0000'), 'must not contain NUL (\\u0000) characters'),
    )
    .min(1)
    .max(5_000),
});

/**
 * The work behind SearchDocumentsAdminController (search-documents.controller.ts).
 *
 * The local search index through the admin API (`Authorization: Bearer <ADMIN_TOKEN>`, like the rest of
 * /admin; 404 when ADMIN_TOKEN is unset). Documents take effect at once for the `local` engine; answers
 * already in the search cache stay there until they expire (about 15 minutes).
 *
 *   POST   /admin/search/documents  {documents: [{url, title?, body | html, source?, fetched_at?}]}
 *          -> {object: 'search.ingest', documents, inserted, updated, unchanged}
 *   DELETE /admin/search/documents  {urls: [...]} -> {object: 'search.delete', deleted}
 */
@Injectable()
export class SearchDocumentsService {
  constructor(@Inject(AdminAccess) private readonly access: AdminAccess) {}

  async ingest(actor: AdminActor, body: unknown) {
    const batch = parseOrThrow(DocumentBatchSchema, body ?? {});
    const now = new Date();
    const docs: SearchDocumentInput[] = [];
    for (const d of batch.documents) docs.push(await prepareDocument(d, { now }));
    const empty = docs.findIndex((d) => !d.body);
    if (empty >= 0) {
      throw ApiError.invalid('The document has no text to index.', `documents[${empty}].body`);
    }
    const r = await this.access.audited(
      actor,
      (tx) => new SearchDocumentsRepository(tx).upsertMany(docs),
      (r) => ({
        action: 'search.ingest',
        targetType: 'search_document',
        after: { urls: docs.map((d) => d.url).slice(0, 100), documents: docs.length, ...r },
      }),
    );
    return { object: 'search.ingest', documents: docs.length, ...r };
  }

  async remove(actor: AdminActor, body: unknown) {
    const { urls } = parseOrThrow(DeleteBodySchema, body ?? {});
    const deleted = await this.access.audited(
      actor,
      (tx) => new SearchDocumentsRepository(tx).deleteUrls(urls),
      (deleted) => ({
        action: 'search.delete',
        targetType: 'search_document',
        before: { urls: urls.slice(0, 100) },
        after: { deleted },
      }),
    );
    return { object: 'search.delete', deleted };
  }
}
