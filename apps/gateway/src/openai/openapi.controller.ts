import { buildOpenApiDocument } from '@infer/contracts';
import { Controller, Get, Header } from '@nestjs/common';
import { Public } from '../auth/public.decorator.js';

/**
 * The OpenAPI 3.1 document, generated from libs/contracts on its first request and kept serialized: one
 * ~130 KB string instead of the document's objects (~0.8 MB of heap) held from start-up by every gateway,
 * when few ever serve it (issue 13's idle memory).
 */
@Controller()
export class OpenApiController {
  private json: string | undefined;

  @Public()
  @Get('/openapi.json')
  @Header('content-type', 'application/json; charset=utf-8')
  get(): string {
    this.json ??= JSON.stringify(buildOpenApiDocument());
    return this.json;
  }
}
