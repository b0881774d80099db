import type { QueueJobDetail } from '@infer/contracts';
import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { Actor, Admin } from '../access/admin.decorator.js';
import type { AdminActor } from '../access/admin-access.service.js';
import { QueueJobsService } from './queue-jobs.service.js';

/**
 * Jobs of the services' BullMQ queues for the operator console: list by state (failed first, with
 * their error), retry a failed job, remove a job. Reads need any role, retry/remove need admin; both
 * are audited. (GET /admin/queues, the counts, lives in admin-queues/.)
 *   GET    /admin/queues/{queue}/jobs?state=failed&start=0&limit=20
 *   GET    /admin/queues/{queue}/jobs/{id}          one job: state, attempts, error, data summary
 *   POST   /admin/queues/{queue}/jobs/{id}/retry
 *   POST   /admin/queues/{queue}/pause              workers take no new job until resumed
 *   POST   /admin/queues/{queue}/resume
 *   DELETE /admin/queues/{queue}/jobs/{id}
 */
@Controller('admin/queues')
export class QueueJobsController {
  constructor(@Inject(QueueJobsService) private readonly svc: QueueJobsService) {}

  @Admin('read')
  @Get(':queue/jobs')
  list(@Param('queue') name: string, @Query() query: unknown) {
    return this.svc.list(name, query);
  }

  @Admin('read')
  @Get(':queue/jobs/:id')
  find(@Param('queue') name: string, @Param('id') id: string): Promise<QueueJobDetail> {
    return this.svc.find(name, id);
  }

  @Admin('write')
  @Post(':queue/pause')
  @HttpCode(200)
  pause(@Actor() actor: AdminActor, @Param('queue') name: string) {
    return this.svc.pause(actor, name);
  }

  @Admin('write')
  @Post(':queue/resume')
  @HttpCode(200)
  resume(@Actor() actor: AdminActor, @Param('queue') name: string) {
    return this.svc.resume(actor, name);
  }

  @Admin('write')
  @Post(':queue/jobs/:id/retry')
  @HttpCode(200)
  retry(@Actor() actor: AdminActor, @Param('queue') name: string, @Param('id') id: string) {
    return this.svc.retry(actor, name, id);
  }

  @Admin('write')
  @Delete(':queue/jobs/:id')
  @HttpCode(200)
  remove(@Actor() actor: AdminActor, @Param('queue') name: string, @Param('id') id: string) {
    return this.svc.remove(actor, name, id);
  }
}
