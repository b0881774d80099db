import { buildOpenApiDocument } from '@infer/contracts';
import { Controller, Get, Header } from '@nestjs/common';
import { Public } from '../auth/public.decorator.js';

/**
 * The OpenAPI 3.1 document, generated from libs/contracts on its first request and kept serialized: one
 * string instead of the document's objects, and nothing held from start-up by the many gateways that never
 * serve it (the idle footprint, ADR 0014; bench/gateway-rss.ts).
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
