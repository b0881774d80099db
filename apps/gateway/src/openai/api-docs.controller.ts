import { buildOpenApiDocument, renderReferenceHtml } from '@infer/contracts';
import { Controller, Get, Header } from '@nestjs/common';
import { Public } from '../auth/public.decorator.js';

/**
 * GET /docs: the API reference as one self-contained HTML page (inline CSS, no script, nothing loaded
 * from elsewhere), rendered from the same OpenAPI document as /openapi.json and docs/api-reference.md.
 * Rendered on its first request and kept as one string, like /openapi.json: no gateway holds it from
 * start-up unless someone reads it.
 */
@Controller()
export class ApiDocsController {
  private html: string | undefined;

  @Public()
  @Get('/docs')
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:")
  get(): string {
    this.html ??= renderReferenceHtml(buildOpenApiDocument());
    return this.html;
  }
}
