import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { SearchIndexService } from './search-index.service.js';

/**
 * Read side of the local search index for the operator console (ingest and delete are
 * POST/DELETE /admin/search/documents in search/search-admin.controller.ts).
 *   GET /admin/search/sources                                  documents per source
 *   GET /admin/search/documents?source=&after=&limit=          one page of documents (no body)
 */
@Controller('admin/search')
export class SearchIndexAdminController {
  constructor(@Inject(SearchIndexService) private readonly svc: SearchIndexService) {}

  @Admin('read')
  @Get('sources')
  sources() {
    return this.svc.sources();
  }

  @Admin('read')
  @Get('documents')
  documents(@Query() query: unknown) {
    return this.svc.documents(query);
  }
}
