import type { MemberRefusals, RequestLogDetail, RequestLogList } from '@infer/contracts';
import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { LogsService } from './logs.service.js';

/**
 * The request log (any signed-in role).
 *   GET /admin/logs?member=&key=&model=&status=&code=&from=&to=&before=&limit=   newest first
 *   GET /admin/logs/{requestId}                                                  one request, with its bodies when logged
 *   GET /admin/members/{id}/refusals                                             why a member is refused
 */
@Controller('admin')
export class LogsController {
  constructor(@Inject(LogsService) private readonly logs: LogsService) {}

  @Admin('read')
  @Get('logs')
  list(@Query() query: unknown): Promise<RequestLogList> {
    return this.logs.list(query);
  }

  @Admin('read')
  @Get('logs/:requestId')
  get(@Param('requestId') requestId: string): Promise<RequestLogDetail> {
    return this.logs.get(requestId);
  }

  @Admin('read')
  @Get('members/:id/refusals')
  refusals(@Param('id') id: string): Promise<MemberRefusals> {
    return this.logs.refusals(id);
  }
}
