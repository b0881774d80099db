import type { MemberStoredResponses, StoredResponsesPurged } from '@infer/contracts';
import { Controller, Delete, Get, Inject, Param } from '@nestjs/common';
import { Actor, Admin } from '../access/admin.decorator.js';
import type { AdminActor } from '../access/admin-access.service.js';
import { StoredResponsesAdminService } from './stored-responses.service.js';

/**
 * A member's stored responses (the Responses API's `store`), for the console's member page.
 *   GET    /admin/members/{id}/stored-responses   how many are kept (any role)
 *   DELETE /admin/members/{id}/stored-responses   purge them all (admin or owner; audited)
 */
@Controller('admin/members')
export class StoredResponsesAdminController {
  constructor(@Inject(StoredResponsesAdminService) private readonly svc: StoredResponsesAdminService) {}

  @Admin('read')
  @Get(':id/stored-responses')
  count(@Param('id') id: string): Promise<MemberStoredResponses> {
    return this.svc.count(id);
  }

  @Admin('write')
  @Delete(':id/stored-responses')
  purge(@Actor() actor: AdminActor, @Param('id') id: string): Promise<StoredResponsesPurged> {
    return this.svc.purge(actor, id);
  }
}
