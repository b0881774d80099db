import { randomBytes } from 'node:crypto';
import {
  ApiError,
  BatchCreateRequestSchema,
  type BatchJobData,
  BatchListQuerySchema,
  type BatchObject,
  parseOrThrow,
  Queues,
} from '@infer/contracts';
import type { Db, Prisma } from '@infer/persistence/lazy';
import { Controller, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { BullQueues } from '../infra/bull-queues.service.js';
import { PRISMA } from '../infra/tokens.js';
import { batchView, caller, notFound } from './views.js';

/** BullMQ options of a batch job: the batch id is the job id (added once), retried on infrastructure failures. */
export const BATCH_JOB_OPTIONS = {
  attempts: 20,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 86_400, count: 1_000 },
  removeOnFail: { age: 7 * 86_400 },
} as const;

/**
 * The Batch API (OpenAI's): POST /v1/batches, GET /v1/batches/{id}, GET /v1/batches (cursor
 * pagination, newest first), POST /v1/batches/{id}/cancel. The work is a BullMQ job run by the batch
 * runner role (batch/runner/): it validates every line (`validating`), runs them (`in_progress`) and
 * writes the output and error files (`finalizing`). A member sees only its own batches.
 */
@Controller('v1/batches')
export class BatchesController {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(BullQueues) private readonly bull: BullQueues,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post()
  @HttpCode(200)
  async create(@Req() req: FastifyRequest): Promise<BatchObject> {
    const auth = caller(req);
    const body = parseOrThrow(BatchCreateRequestSchema, req.body ?? {});
    const file = await this.db.file.findFirst({ where: { id: body.input_file_id, memberId: auth.memberId } });
    if (!file || file.expiresAt <= new Date()) {
      throw ApiError.invalid(`No such File object: ${body.input_file_id}`, 'input_file_id');
    }
    if (file.purpose !== 'batch') {
      throw ApiError.invalid(
        `The file ${file.id} has purpose '${file.purpose}': a batch needs a file uploaded with purpose 'batch'.`,
        'input_file_id',
      );
    }
    const now = new Date();
    const id = `batch_${randomBytes(12).toString('hex')}`;
    const row = await this.db.batch.create({
      data: {
        id,
        memberId: auth.memberId,
        keyId: auth.keyId,
        subject: {
          tier: auth.tier,
          billingAnchor: auth.billingAnchor.toISOString(),
          overrides: (auth.overrides ?? null) as Prisma.InputJsonValue,
        } as Prisma.InputJsonValue,
        endpoint: body.endpoint,
        inputFileId: file.id,
        completionWindow: body.completion_window,
        status: 'validating',
        metadata: (body.metadata ?? undefined) as Prisma.InputJsonValue | undefined,
        total: file.lines,
        createdAt: now,
        expiresAt: new Date(+now + this.config.BATCH_COMPLETION_WINDOW_MS),
      },
    });
    const data: BatchJobData = { batchId: id };
    const queue = await this.bull.get(Queues.batches);
    await queue.add('batch', data, { ...BATCH_JOB_OPTIONS, jobId: id });
    return batchView(row);
  }

  @Get()
  async list(@Req() req: FastifyRequest, @Query() query: Record<string, unknown>) {
    const auth = caller(req);
    const q = parseOrThrow(BatchListQuerySchema, query);
    const where: Prisma.BatchWhereInput = { memberId: auth.memberId };
    if (q.after) {
      const cursor = await this.db.batch.findFirst({ where: { id: q.after, memberId: auth.memberId } });
      if (!cursor) throw notFound('batch', q.after, 'after');
      where.OR = [
        { createdAt: { lt: cursor.createdAt } },
        { createdAt: cursor.createdAt, id: { lt: cursor.id } },
      ];
    }
    const rows = await this.db.batch.findMany({
      where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: q.limit + 1,
    });
    const page = rows.slice(0, q.limit).map(batchView);
    return {
      object: 'list' as const,
      data: page,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: rows.length > q.limit,
    };
  }

  @Get(':id')
  async retrieve(@Req() req: FastifyRequest, @Param('id') id: string): Promise<BatchObject> {
    const auth = caller(req);
    const row = await this.db.batch.findFirst({ where: { id, memberId: auth.memberId } });
    if (!row) throw notFound('batch', id, 'batch_id');
    return batchView(row);
  }

  /**
   * Moves a validating or running batch to `cancelling`; the runner stops starting lines within a
   * second, lets the running ones finish and finalizes it as `cancelled` with what completed.
   */
  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@Req() req: FastifyRequest, @Param('id') id: string): Promise<BatchObject> {
    const auth = caller(req);
    const moved = await this.db.batch.updateMany({
      where: { id, memberId: auth.memberId, status: { in: ['validating', 'in_progress'] } },
      data: { status: 'cancelling', cancellingAt: new Date() },
    });
    const row = await this.db.batch.findFirst({ where: { id, memberId: auth.memberId } });
    if (!row) throw notFound('batch', id, 'batch_id');
    if (moved.count === 0 && row.status !== 'cancelling' && row.status !== 'cancelled') {
      throw new ApiError(409, `Cannot cancel a batch with status '${row.status}'.`, {
        type: 'invalid_request_error',
        code: 'invalid_request_error',
        param: null,
      });
    }
    return batchView(row);
  }
}
