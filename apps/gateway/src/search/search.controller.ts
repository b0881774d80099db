import {
  ApiError,
  type FunctionToolDefinition,
  parseOrThrow,
  SearchRequestSchema,
  type SearchResponse,
  WEB_SEARCH_TOOL,
} from '@infer/contracts';
import { Controller, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { workIdOf } from '../common/request-id.js';
import { SearchGateway } from './search.service.js';

@Controller('v1/search')
export class SearchController {
  constructor(@Inject(SearchGateway) private readonly gateway: SearchGateway) {}

  /** POST /v1/search: validate (400 names the field), then search within the key's search budget. */
  @Post()
  @HttpCode(200)
  async search(
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SearchResponse> {
    if (!req.auth) throw ApiError.invalidKey();
    const body = parseOrThrow(SearchRequestSchema, req.body ?? {});
    const out = await this.gateway.search(req.auth, body, workIdOf(req), '/v1/search');
    void reply.headers(out.headers);
    return out.response;
  }

  /**
   * GET /v1/search/tool: the `web_search` function definition, ready for a chat request's `tools`
   * (the same four parameters as POST /v1/search, `query` required).
   */
  @Get('tool')
  tool(): FunctionToolDefinition {
    return WEB_SEARCH_TOOL;
  }
}
