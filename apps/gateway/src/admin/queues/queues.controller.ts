import { Controller, Get, Inject } from '@nestjs/common';
import { Admin } from '../access/admin.decorator.js';
import { type QueueList, QueuesService } from './queues.service.js';

/**
 * GET /admin/queues: depth and recent timings of the services' BullMQ queues (today the audio-service's
 * transcriptions), read from Redis, so the view is the same whichever gateway replica answers. Admin
 * credential as the rest of /admin (checkAdmin: `Authorization: Bearer <ADMIN_TOKEN>`).
 */
@Controller('admin')
export class QueuesAdminController {
  constructor(@Inject(QueuesService) private readonly queues: QueuesService) {}

  @Admin('read')
  @Get('queues')
  list(): Promise<QueueList> {
    return this.queues.list();
  }
}
