import { parseOrThrow } from '@infer/contracts';
import type { Db } from '@infer/persistence/lazy';
import { SearchDocumentsRepository } from '@infer/search-index';
import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import { PRISMA } from '../../infra/tokens.js';

const DocumentsQuerySchema = z
  .object({
    source: z.string().min(1).max(200).optional(),
    /** Cursor: the `next_after` (a url) of the previous page. */
    after: z.string().min(1).max(4000).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();

/**
 * The work behind SearchIndexAdminController (search-index.controller.ts).
 *
 * Read side of the local search index for the operator console (ingest and delete are
 * POST/DELETE /admin/search/documents in search/search-admin.controller.ts).
 *   GET /admin/search/sources                                  documents per source
 *   GET /admin/search/documents?source=&after=&limit=          one page of documents (no body)
 */
@Injectable()
export class SearchIndexService {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(SearchDocumentsRepository) private readonly repo: SearchDocumentsRepository,
  ) {}

  async sources() {
    const rows = await this.repo.stats();
    return {
      object: 'list' as const,
      data: rows.map((r) => ({
        source: r.source,
        documents: r.documents,
        newest: r.newest ? Math.floor(+r.newest / 1000) : null,
      })),
    };
  }

  async documents(query: unknown) {
    const q = parseOrThrow(DocumentsQuerySchema, query ?? {});
    const found = await this.db.searchDocument.findMany({
      where: { ...(q.source ? { source: q.source } : {}), ...(q.after ? { url: { gt: q.after } } : {}) },
      orderBy: { url: 'asc' },
      take: q.limit + 1,
      select: { url: true, title: true, source: true, fetchedAt: true },
    });
    const page = found.slice(0, q.limit);
    return {
      object: 'list' as const,
      data: page.map((d) => ({
        url: d.url,
        title: d.title,
        source: d.source,
        fetched_at: Math.floor(+d.fetchedAt / 1000),
      })),
      next_after: found.length > q.limit ? (page.at(-1)?.url ?? null) : null,
    };
  }
}
