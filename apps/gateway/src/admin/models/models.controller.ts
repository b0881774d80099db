import { Body, Controller, Get, Inject, Param, Patch } from '@nestjs/common';
import { Actor, Admin } from '../access/admin.decorator.js';
import type { AdminActor } from '../access/admin-access.service.js';
import { ModelsAdminService } from './models.service.js';

/**
 * The model catalog (models.service.ts).
 *   GET   /admin/models          every model, disabled ones included
 *   GET   /admin/models/pools    each model's engine endpoints over the service replicas
 *   PATCH /admin/models/{id}     {enabled}
 */
@Controller('admin/models')
export class ModelsAdminController {
  constructor(@Inject(ModelsAdminService) private readonly models: ModelsAdminService) {}

  @Admin('read')
  @Get()
  list() {
    return this.models.list();
  }

  @Admin('read')
  @Get('pools')
  pools() {
    return this.models.pools();
  }

  @Admin('write')
  @Patch(':id')
  setEnabled(@Actor() actor: AdminActor, @Param('id') id: string, @Body() body: unknown) {
    return this.models.setEnabled(actor, id, body);
  }
}
