import type { AdminUsageReport } from '@infer/contracts';
import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { UsageReportService } from './usage-report.service.js';

/**
 * Usage from the ledger, grouped by member, key and/or model (the live state of a key's limits is
 * GET /admin/keys/{key}/limits, keys/).
 */
@Controller('admin')
export class UsageReportController {
  constructor(@Inject(UsageReportService) private readonly svc: UsageReportService) {}

  @Admin('read')
  @Get('usage')
  usage(@Query() q: Record<string, unknown>): Promise<AdminUsageReport> {
    return this.svc.usage(q);
  }
}
