import type { AuditList } from '@infer/contracts';
import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { AuditService } from './audit.service.js';

/**
 * The audit log (any signed-in role).
 *   GET /admin/audit?actor=&action=&target_type=&target_id=&from=&to=&before=&limit=
 */
@Controller('admin/audit')
export class AuditController {
  constructor(@Inject(AuditService) private readonly audit: AuditService) {}

  @Admin('read')
  @Get()
  list(@Query() query: unknown): Promise<AuditList> {
    return this.audit.list(query);
  }
}
