import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { BatchesAdminService } from './batches.service.js';

/**
 * GET /admin/members/{memberId}/batches?status=&after=&limit=: one page of a member's batches, newest
 * first, with their progress (lines that have their output or error line / all lines). `after` is the
 * id of the last batch of the previous page; `next_after` is the cursor of the next page (null on the
 * last). For running batches `request_counts` are the live counts of the checkpoint rows. Any operator
 * role may read.
 */
@Controller('admin/members')
export class BatchesAdminController {
  constructor(@Inject(BatchesAdminService) private readonly svc: BatchesAdminService) {}

  @Admin('read')
  @Get(':memberId/batches')
  list(@Param('memberId') memberId: string, @Query() q: Record<string, unknown>) {
    return this.svc.list(memberId, q);
  }
}
