import type { AdminAlertList } from '@infer/contracts';
import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { AlertsService } from './alerts.service.js';

/**
 * Budget and allowance alerts with their delivery log (any signed-in role).
 *   GET /admin/alerts?member=&status=&limit=
 */
@Controller('admin/alerts')
export class AlertsController {
  constructor(@Inject(AlertsService) private readonly alerts: AlertsService) {}

  @Admin('read')
  @Get()
  list(@Query() query: unknown): Promise<AdminAlertList> {
    return this.alerts.list(query);
  }
}
