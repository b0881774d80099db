import type { DailyUsage, HourlyUsage } from '@infer/contracts';
import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { UsageRollupsService } from './usage-rollups.service.js';

/**
 * Usage charts from the rollups the ledger writer keeps (UsageDaily, UsageHourlyModel), never from
 * the raw ledger, so they stay fast at any ledger size.
 *   GET /admin/usage/daily?from=YYYY-MM-DD&to=YYYY-MM-DD&member=&key=&model=&group_by=model|member|key|none&top=50
 *   GET /admin/usage/hourly?hours=24    platform-wide, per model and hour
 */
@Controller('admin/usage')
export class UsageRollupsController {
  constructor(@Inject(UsageRollupsService) private readonly svc: UsageRollupsService) {}

  @Admin('read')
  @Get('daily')
  daily(@Query() query: unknown): Promise<DailyUsage> {
    return this.svc.daily(query);
  }

  @Admin('read')
  @Get('hourly')
  hourly(@Query() query: unknown): Promise<HourlyUsage> {
    return this.svc.hourly(query);
  }
}
