import { ApiError } from '@infer/contracts';
import { Controller, Get, Inject, Param, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { CatalogService } from '../catalog/catalog.service.js';

/**
 * GET /v1/models and /v1/models/:id. A request that carries `anthropic-version` (Anthropic's SDKs send
 * it on every call) gets Anthropic's shapes: `{data, has_more, first_id, last_id}` and
 * `{type: 'model', id, display_name, created_at}`; errors then leave in Anthropic's shape too.
 */
@Controller('v1')
export class ModelsController {
  constructor(@Inject(CatalogService) private readonly catalog: CatalogService) {}

  /** Exactly the models the calling key may use, most capable first (precomputed per tier). */
  @Get('models')
  list(@Req() req: FastifyRequest) {
    const { tier, models } = req.auth!;
    if (req.headers['anthropic-version'] !== undefined) {
      const list = this.catalog.current.anthropicListFor(tier);
      return models === null ? list : { ...list, data: list.data.filter((m) => models.has(m.id)) };
    }
    return this.catalog.current.listFor(tier, models);
  }

  /** One model, if the calling key may use it (the SDK's models.retrieve); an alias names its model. */
  @Get('models/:id')
  get(@Req() req: FastifyRequest, @Param('id') id: string) {
    const { tier, models } = req.auth!;
    const snap = this.catalog.current;
    const modelId = snap.named(id)?.id ?? id;
    if (models !== null && !models.has(modelId)) throw ApiError.modelNotFound(id);
    if (req.headers['anthropic-version'] !== undefined) {
      const found = snap.anthropicListFor(tier).data.find((m) => m.id === modelId);
      if (!found) throw ApiError.modelNotFound(id);
      return found;
    }
    const found = snap.listFor(tier).data.find((m) => m.id === modelId);
    if (!found) throw ApiError.modelNotFound(id);
    return found;
  }
}
