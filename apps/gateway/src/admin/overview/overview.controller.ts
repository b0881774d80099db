import { ApiError, type Overview, OverviewQuerySchema, parseOrThrow } from '@infer/contracts';
import { Controller, Get, Inject, type OnModuleDestroy, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hijackEventStream } from '../../http/event-stream.js';
import { Admin } from '../access/admin.decorator.js';
import { AdminAccess } from '../access/admin-access.service.js';
import { OverviewService } from './overview.service.js';

/** How often the stream sends an overview, how often it re-checks the session, how long it lives. */
export const STREAM_EVERY_MS = 2_000;
const RECHECK_MS = 30_000;
const STREAM_MAX_MS = 10 * 60_000;

/**
 * The console's live overview (any role):
 *   GET /admin/overview?minutes=60          one snapshot (JSON)
 *   GET /admin/overview/stream?minutes=60   Server-Sent Events: `event: overview` every 2 s. The
 *     stream re-checks the session every 30 s (an expired or disabled session ends it with
 *     `event: end`) and closes itself after 10 minutes; EventSource reconnects on its own.
 */
@Controller('admin/overview')
export class OverviewController implements OnModuleDestroy {
  /** The open streams' enders: a shutting-down gateway ends them (clients reconnect elsewhere). */
  private readonly open = new Set<(reason: string, code: string) => void>();

  constructor(
    @Inject(OverviewService) private readonly overview: OverviewService,
    @Inject(AdminAccess) private readonly access: AdminAccess,
  ) {}

  onModuleDestroy(): void {
    for (const end of [...this.open]) end('The gateway is shutting down.', 'shutdown');
  }

  @Admin('read')
  @Get()
  async get(@Query() query: unknown): Promise<Overview> {
    const { minutes } = parseOrThrow(OverviewQuerySchema, query ?? {});
    return this.overview.overview(minutes);
  }

  @Admin('read')
  @Get('stream')
  async stream(
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
    @Query() query: unknown,
  ): Promise<void> {
    const { minutes } = parseOrThrow(OverviewQuerySchema, query ?? {});
    const raw = hijackEventStream(reply);
    raw.write('retry: 3000\n\n');
    const opened = Date.now();
    let lastCheck = opened;
    let busy = false;
    let closed = false;
    const end = (reason: string, code: string) => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      this.open.delete(end);
      if (!raw.writableEnded) {
        raw.write(`event: end\ndata: ${JSON.stringify({ reason, code })}\n\n`);
        raw.end();
      }
    };
    const tick = async () => {
      if (busy || closed) return;
      busy = true;
      try {
        const now = Date.now();
        if (now - opened > STREAM_MAX_MS) return end('The stream is renewed every 10 minutes.', 'renew');
        if (now - lastCheck > RECHECK_MS) {
          lastCheck = now;
          try {
            await this.access.require(req, 'read');
          } catch (e) {
            return end(
              e instanceof ApiError ? e.message : 'Access ended.',
              e instanceof ApiError ? (e.code ?? 'forbidden') : 'forbidden',
            );
          }
        }
        const data = await this.overview.overview(minutes);
        if (!closed) raw.write(`event: overview\ndata: ${JSON.stringify(data)}\n\n`);
      } catch {
        if (!closed)
          raw.write(
            `event: failure\ndata: ${JSON.stringify({ message: 'Overview unavailable; retrying.' })}\n\n`,
          );
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(() => void tick(), STREAM_EVERY_MS);
    this.open.add(end);
    raw.on('close', () => {
      closed = true;
      clearInterval(timer);
      this.open.delete(end);
    });
    await tick();
  }
}
