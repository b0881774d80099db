import { randomUUID } from 'node:crypto';
import {
  ApiError,
  normalizeFormFields,
  parseOrThrow,
  TranscriptionRequestSchema,
  type TranscriptionUpload,
} from '@infer/contracts';
import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { CatalogService } from '../catalog/catalog.service.js';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { REDIS } from '../infra/tokens.js';
import { ModelGateway } from './model-gateway.service.js';
import { Routes } from './routes.js';
import { readTranscriptionForm } from './transcription-form.js';

/** Redis key prefix of uploads parked for the audio-service. */
const UPLOAD_PREFIX = 'infer:blob:upload:';

/**
 * POST /v1/audio/transcriptions (multipart/form-data). The form is read and checked here (fields with
 * TranscriptionRequestSchema, `file` present and at most 25 MB, model known and reachable) before the
 * audio is parked in Redis under a key with a TTL: a NATS message holds 1 MB by default, so the
 * envelope carries the key (TranscriptionUpload) and the audio-service's workers read the bytes. The
 * key is deleted when the request ends, whatever the outcome.
 */
@Controller('v1')
export class TranscriptionsController {
  constructor(
    @Inject(ModelGateway) private readonly gateway: ModelGateway,
    @Inject(CatalogService) private readonly catalog: CatalogService,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post('audio/transcriptions')
  @HttpCode(200)
  async create(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const auth = req.auth;
    if (!auth) throw ApiError.invalidKey();
    const form = await readTranscriptionForm(req);
    const fields = normalizeFormFields(form.fields);
    const parsed = parseOrThrow(TranscriptionRequestSchema, fields);
    if (!form.file) throw ApiError.invalid("Missing required parameter: 'file'.", 'file');
    const route = Routes.transcriptions;
    // An unknown model, or one the key's tier does not reach, is answered before the audio is parked.
    this.catalog.current.resolve(parsed.model, auth.tier, route.kinds, route.endpoint, auth.models);
    const key = `${UPLOAD_PREFIX}${randomUUID()}`;
    await this.redis.set(key, form.file.data, 'PX', this.config.REQUEST_TIMEOUT_MS + 60_000);
    const upload: TranscriptionUpload = {
      key,
      bytes: form.file.data.length,
      contentType: form.file.mimetype,
      ...(form.file.filename ? { filename: form.file.filename } : {}),
    };
    try {
      await this.gateway.handle(route, req, reply, { ...fields, file: upload });
    } finally {
      await this.redis.del(key).catch(() => undefined);
    }
  }
}
