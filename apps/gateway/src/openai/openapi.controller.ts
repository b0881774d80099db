import { buildOpenApiDocument } from '@infer/contracts';
import { Controller, Get } from '@nestjs/common';
import { Public } from '../auth/public.decorator.js';

/** The OpenAPI 3.1 document, generated once from libs/contracts. */
@Controller()
export class OpenApiController {
  private readonly doc = buildOpenApiDocument();

  @Public()
  @Get('/openapi.json')
  get() {
    return this.doc;
  }
}
