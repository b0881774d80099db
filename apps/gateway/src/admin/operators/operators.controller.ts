import type { OperatorView } from '@infer/contracts';
import { Body, Controller, Get, Inject, Param, Patch, Post } from '@nestjs/common';
import { Actor, Admin } from '../access/admin.decorator.js';
import type { AdminActor } from '../access/admin-access.service.js';
import { type OperatorList, OperatorsService } from './operators.service.js';

@Controller('admin')
export class OperatorsController {
  constructor(@Inject(OperatorsService) private readonly svc: OperatorsService) {}

  @Admin('owner')
  @Get('operators')
  list(): Promise<OperatorList> {
    return this.svc.list();
  }

  @Admin('owner')
  @Post('operators')
  create(@Actor() actor: AdminActor, @Body() body: unknown): Promise<OperatorView> {
    return this.svc.create(actor, body);
  }

  @Admin('owner')
  @Patch('operators/:id')
  update(@Actor() actor: AdminActor, @Param('id') id: string, @Body() body: unknown): Promise<OperatorView> {
    return this.svc.update(actor, id, body);
  }
}
