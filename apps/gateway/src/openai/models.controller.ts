import { ApiError } from '@infer/contracts';
import { Controller, Get, Inject, Param, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { CatalogService } from '../catalog/catalog.service.js';

@Controller('v1')
export class ModelsController {
  constructor(@Inject(CatalogService) private readonly catalog: CatalogService) {}

  /** Exactly the models the calling key may use, most capable first (precomputed per tier). */
  @Get('models')
  list(@Req() req: FastifyRequest) {
    return this.catalog.current.listFor(req.auth!.tier);
  }

  /** One model, if the calling key may use it (the SDK's models.retrieve). */
  @Get('models/:id')
  get(@Req() req: FastifyRequest, @Param('id') id: string) {
    const found = this.catalog.current.listFor(req.auth!.tier).data.find((m) => m.id === id);
    if (!found) throw ApiError.modelNotFound(id);
    return found;
  }
}
