import type { MemberQuotas } from '@infer/contracts';
import { Controller, Get, Inject, Param } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { QuotasService } from './quotas.service.js';

/**
 * GET /admin/members/{id}/quotas: every quota of a member as the gateway's limits store counts it
 * (LimitsStore.state: the same Redis counters and the same ledger rebuild the admission uses):
 * the member's own (token allowances per month or billing period, images per month) once, and each
 * active key's (rolling token budgets, web searches per day). Any role.
 */
@Controller('admin/members')
export class QuotasController {
  constructor(@Inject(QuotasService) private readonly svc: QuotasService) {}

  @Admin('read')
  @Get(':id/quotas')
  quotas(@Param('id') id: string): Promise<MemberQuotas> {
    return this.svc.quotas(id);
  }
}
