import { randomBytes } from 'node:crypto';
import type { Multipart } from '@fastify/multipart';
import {
  ApiError,
  BATCH_FILE_MAX_BYTES,
  BATCH_FILE_MAX_LINES,
  FILE_UPLOAD_PURPOSES,
  FileListQuerySchema,
  type FileObject,
  formatCount,
  parseOrThrow,
} from '@infer/contracts';
import type { FileStore } from '@infer/image-store';
import type { Db } from '@infer/persistence/lazy';
import type { Logger } from '@infer/telemetry';
import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { multipartError, partName } from '../common/multipart-errors.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { FILE_STORE, LOGGER, PRISMA } from '../infra/tokens.js';
import { caller, fileView, notFound } from './views.js';

const NL = 0x0a;

/** Counts the non-empty lines of a byte stream as it passes (a line of only whitespace is empty). */
export class LineCounter {
  lines = 0;
  bytes = 0;
  private content = false;

  push(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === NL) {
        if (this.content) this.lines++;
        this.content = false;
      } else if (!this.content && c !== 0x20 && c !== 0x09 && c !== 0x0d) {
        this.content = true;
      }
    }
  }

  /** Lines including a last one without a newline. */
  get total(): number {
    return this.lines + (this.content ? 1 : 0);
  }
}

/**
 * The Files API (OpenAI's): POST /v1/files (multipart `file` + `purpose: batch`, streamed to the file
 * store: never the whole file in memory), GET /v1/files (cursor pagination), GET /v1/files/{id},
 * GET /v1/files/{id}/content, DELETE /v1/files/{id}. A member sees only its own files: another
 * member's id is a 404, like an unknown one.
 */
@Controller('v1/files')
export class FilesController {
  constructor(
    @Inject(PRISMA) private readonly db: Db,
    @Inject(FILE_STORE) private readonly store: FileStore,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  @Post()
  @HttpCode(200)
  async upload(@Req() req: FastifyRequest): Promise<FileObject> {
    const auth = caller(req);
    if (!req.isMultipart()) {
      throw new ApiError(
        415,
        'Unsupported Content-Type: /v1/files takes multipart/form-data with `file` and `purpose`.',
        {
          type: 'invalid_request_error',
          code: 'unsupported_media_type',
        },
      );
    }
    const id = `file-${randomBytes(12).toString('hex')}`;
    let purpose: string | null = null;
    let filename: string | null = null;
    let stored: LineCounter | null = null;
    let failure: ApiError | null = null;
    try {
      for await (const part of req.parts({
        limits: { fileSize: BATCH_FILE_MAX_BYTES + 1, files: 2 },
      }) as AsyncIterable<Multipart>) {
        let name: string;
        try {
          name = partName(part.fieldname);
        } catch (e) {
          failure ??= e as ApiError;
          if (part.type === 'file') await drain(part.file);
          continue;
        }
        if (part.type === 'field') {
          if (name === 'purpose') purpose = String(part.value);
          continue;
        }
        if (name !== 'file' || stored) {
          if (name === 'file') failure ??= ApiError.invalid('Send one file in `file`.', 'file');
          await drain(part.file);
          continue;
        }
        filename = (part.filename || 'upload.jsonl').slice(0, 255);
        const counter = new LineCounter();
        // Over the line limit, the rest of the part is read and dropped (never stored), so that the
        // client sends its whole body and gets the 400 instead of a reset connection.
        let tooManyLines = false;
        const source = (async function* () {
          for await (const chunk of part.file as AsyncIterable<Buffer>) {
            if (tooManyLines) continue;
            counter.push(chunk);
            if (counter.total > BATCH_FILE_MAX_LINES) {
              tooManyLines = true;
              continue;
            }
            yield chunk;
          }
        })();
        try {
          await this.store.put(id, source);
        } catch (e) {
          throw isStoreFailure(e) ? new StoreFailure(e) : e;
        }
        if (tooManyLines) {
          failure ??= ApiError.invalid(
            `The file has more than ${formatCount(BATCH_FILE_MAX_LINES)} lines, the most a batch takes. Split it into several batches.`,
            'file',
          );
        }
        stored = counter;
        if (part.file.truncated) {
          failure ??= ApiError.invalid(
            'The file is larger than 200 MB, the largest batch input file.',
            'file',
          );
        } else if (counter.total === 0) {
          failure ??= ApiError.invalid('The file is empty.', 'file');
        }
      }
    } catch (e) {
      await this.store.delete(id).catch(() => undefined);
      if (e instanceof StoreFailure) {
        this.log.error({ err: e.cause }, 'file store write failed');
        throw ApiError.internal();
      }
      throw multipartError(e, { filesParam: 'file', maxFiles: 1 });
    }
    if (!failure && !stored) failure = ApiError.invalid('Missing required parameter: file.', 'file');
    if (!failure && purpose === null)
      failure = ApiError.invalid('Missing required parameter: purpose.', 'purpose');
    if (!failure && !(FILE_UPLOAD_PURPOSES as readonly string[]).includes(purpose!)) {
      failure = ApiError.invalid(
        `Invalid purpose '${String(purpose).slice(0, 64)}': this platform takes ${FILE_UPLOAD_PURPOSES.map((p) => `'${p}'`).join(', ')}.`,
        'purpose',
      );
    }
    if (failure) {
      if (stored) await this.store.delete(id).catch(() => undefined);
      throw failure;
    }
    const now = new Date();
    const row = await this.db.file.create({
      data: {
        id,
        memberId: auth.memberId,
        purpose: purpose!,
        filename: filename!,
        bytes: BigInt(stored!.bytes),
        lines: stored!.total,
        storageKey: id,
        createdAt: now,
        expiresAt: new Date(+now + this.config.FILE_RETENTION_DAYS * 86_400_000),
      },
    });
    return fileView(row);
  }

  @Get()
  async list(@Req() req: FastifyRequest, @Query() query: Record<string, unknown>) {
    const auth = caller(req);
    const q = parseOrThrow(FileListQuerySchema, query);
    const desc = q.order === 'desc';
    const where: Record<string, unknown> = { memberId: auth.memberId, expiresAt: { gt: new Date() } };
    if (q.purpose) where.purpose = q.purpose;
    if (q.after) {
      const cursor = await this.db.file.findFirst({ where: { id: q.after, memberId: auth.memberId } });
      if (!cursor) throw notFound('file', q.after, 'after');
      const op = desc ? 'lt' : 'gt';
      where.OR = [
        { createdAt: { [op]: cursor.createdAt } },
        { createdAt: cursor.createdAt, id: { [op]: cursor.id } },
      ];
    }
    const order = desc ? 'desc' : 'asc';
    const rows = await this.db.file.findMany({
      where,
      orderBy: [{ createdAt: order }, { id: order }],
      take: q.limit + 1,
    });
    const page = rows.slice(0, q.limit).map(fileView);
    return {
      object: 'list' as const,
      data: page,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: rows.length > q.limit,
    };
  }

  private async own(req: FastifyRequest, id: string) {
    const auth = caller(req);
    const row = await this.db.file.findFirst({ where: { id, memberId: auth.memberId } });
    if (!row || row.expiresAt <= new Date()) throw notFound('file', id, 'file_id');
    return row;
  }

  @Get(':id')
  async retrieve(@Req() req: FastifyRequest, @Param('id') id: string): Promise<FileObject> {
    return fileView(await this.own(req, id));
  }

  @Get(':id/content')
  async content(
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param('id') id: string,
  ): Promise<void> {
    const row = await this.own(req, id);
    const stream = await this.store.get(row.storageKey);
    if (!stream) {
      this.log.error({ fileId: id }, 'file row without its bytes in the file store');
      throw notFound('file', id, 'file_id');
    }
    void reply
      .type('application/jsonl')
      .header('content-length', String(row.bytes))
      .header('content-disposition', `attachment; filename="${row.filename.replace(/["\\\r\n]/g, '_')}"`)
      .send(stream);
  }

  @Delete(':id')
  async remove(@Req() req: FastifyRequest, @Param('id') id: string) {
    const row = await this.own(req, id);
    await this.db.file.delete({ where: { id: row.id } });
    await this.store
      .delete(row.storageKey)
      .catch((err) => this.log.warn({ err, fileId: id }, 'file bytes not deleted'));
    return { id: row.id, object: 'file' as const, deleted: true };
  }
}

/** A failure of the file store itself (a 500), not of the client's upload (a 400). */
class StoreFailure {
  constructor(readonly cause: unknown) {}
}

function isStoreFailure(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code) && code !== 'ECONNRESET') return true;
  return /^S3 /.test(String((e as Error)?.message ?? ''));
}

async function drain(stream: NodeJS.ReadableStream): Promise<void> {
  const s = stream as NodeJS.ReadableStream & { readableEnded?: boolean; destroyed?: boolean };
  if (s.readableEnded || s.destroyed) return;
  stream.resume();
  await new Promise<void>((resolve) => {
    stream.once('end', () => resolve());
    stream.once('error', () => resolve());
    stream.once('close', () => resolve());
  });
}
