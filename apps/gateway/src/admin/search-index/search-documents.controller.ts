import { Body, Controller, Delete, HttpCode, Inject, Post } from '@nestjs/common';
import { Actor, Admin } from '../access/admin.decorator.js';
import type { AdminActor } from '../access/admin-access.service.js';
import { SearchDocumentsService } from './search-documents.service.js';

/**
 * The local search index through the admin API (`Authorization: Bearer <ADMIN_TOKEN>`, like the rest of
 * /admin; 404 when ADMIN_TOKEN is unset). Documents take effect at once for the `local` engine; answers
 * already in the search cache stay there until they expire (about 15 minutes).
 *
 *   POST   /admin/search/documents  {documents: [{url, title?, body | html, source?, fetched_at?}]}
 *          -> {object: 'search.ingest', documents, inserted, updated, unchanged}
 *   DELETE /admin/search/documents  {urls: [...]} -> {object: 'search.delete', deleted}
 */
@Controller('admin/search')
export class SearchDocumentsAdminController {
  constructor(@Inject(SearchDocumentsService) private readonly svc: SearchDocumentsService) {}

  @Admin('write')
  @Post('documents')
  @HttpCode(200)
  ingest(@Actor() actor: AdminActor, @Body() body: unknown) {
    return this.svc.ingest(actor, body);
  }

  @Admin('write')
  @Delete('documents')
  @HttpCode(200)
  remove(@Actor() actor: AdminActor, @Body() body: unknown) {
    return this.svc.remove(actor, body);
  }
}
