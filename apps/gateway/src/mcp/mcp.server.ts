import {
  ApiError,
  type ErrorBody,
  JsonRpcErrorCode,
  McpToolCallParamsSchema,
  parseOrThrow,
  SearchRequestSchema,
  SearchResponseSchema,
  WEB_SEARCH_TOOL,
  WEB_SEARCH_TOOL_NAME,
} from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type CallToolResult, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AuthedKey } from '../auth/key-cache.js';
import type { SearchGateway } from '../search/search.service.js';

export const MCP_SERVER_INFO = { name: 'infer-platform', title: 'Inference API tools', version: '1.0.0' };

/** The JSON Schema of the tool's result (SearchResponse), inlined and without `$schema`. */
function outputSchema(): Tool['outputSchema'] {
  const json = z.toJSONSchema(SearchResponseSchema, { target: 'draft-2020-12', io: 'output' }) as {
    $defs?: Record<string, Record<string, unknown>>;
  } & Record<string, unknown>;
  const root = json.$defs?.[SearchResponseSchema.meta()?.id ?? ''] ?? json;
  const { $schema: _s, $defs: _d, ...rest } = root as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest)) as Tool['outputSchema'];
}

/** `tools/list`: the one tool, web_search, with the arguments of POST /v1/search. */
export const WEB_SEARCH_MCP_TOOL: Tool = {
  name: WEB_SEARCH_TOOL_NAME,
  title: 'Web search',
  description: WEB_SEARCH_TOOL.function.description,
  inputSchema: WEB_SEARCH_TOOL.function.parameters as Tool['inputSchema'],
  outputSchema: outputSchema(),
  annotations: { readOnlyHint: true, openWorldHint: true, idempotentHint: true },
};

/**
 * The SDK validates a request with the handler's schema before anything else and reports a mismatch as
 * -32603 Internal error; with this lenient schema the SDK's own tools/call check (CallToolRequestSchema)
 * runs instead and answers -32602 Invalid params, as JSON-RPC asks for bad params.
 */
const LenientCallToolRequest = z.looseObject({
  method: z.literal('tools/call'),
  params: z.looseObject({}).optional(),
});

/** A JSON-RPC error with a clean message (the SDK sends `code`, `message` and `data` as they are). */
export class JsonRpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** What one POST /mcp knows: who calls, and a failure that must become an HTTP status (429). */
export interface McpRequestContext {
  auth: AuthedKey;
  requestId: string;
  /** Set when a tool call hit a limit: the whole POST is answered with this error's status and body. */
  httpError: ApiError | null;
  /** tools/call counter, to give each call of a batch its own request id. */
  calls: number;
}

function toolError(body: ErrorBody): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/**
 * A per-request MCP server (stateless: no session outlives the POST) built on the official SDK: the
 * SDK answers initialize, ping and unknown methods (-32601) itself; we add tools/list and tools/call.
 *
 * tools/call outcomes:
 *   - unknown tool name: JSON-RPC error -32602;
 *   - invalid arguments, or a search that fails (503 search_unavailable ...): a tool result with
 *     `isError: true` and the spec's Error body as text, so a model can read it and retry;
 *   - a search-budget refusal (429): the whole HTTP answer becomes the 429 Error body with Retry-After;
 *   - success: the SearchResponse as `structuredContent` and as JSON text.
 */
export function buildMcpServer(ctx: McpRequestContext, search: SearchGateway, log: Logger): Server {
  const server = new Server(MCP_SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions:
      'One tool, web_search: search the web (query, count 1-20, freshness pd/pw/pm/py or YYYY-MM-DDtoYYYY-MM-DD, fetch_content for the main text of each result page).',
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [WEB_SEARCH_MCP_TOOL] }));
  server.setRequestHandler(LenientCallToolRequest, async (request): Promise<CallToolResult> => {
    const params = McpToolCallParamsSchema.safeParse(request.params);
    if (!params.success)
      throw new JsonRpcFailure(JsonRpcErrorCode.invalidParams, 'Invalid params: expected {name, arguments}.');
    if (params.data.name !== WEB_SEARCH_TOOL_NAME) {
      throw new JsonRpcFailure(
        JsonRpcErrorCode.invalidParams,
        `Unknown tool: ${params.data.name}. The only tool is ${WEB_SEARCH_TOOL_NAME}.`,
      );
    }
    const n = ctx.calls++;
    const requestId = n === 0 ? ctx.requestId : `${ctx.requestId}.${n}`;
    try {
      const body = parseOrThrow(SearchRequestSchema, params.data.arguments ?? {});
      const out = await search.search(ctx.auth, body, requestId, '/mcp');
      return {
        content: [{ type: 'text', text: JSON.stringify(out.response) }],
        structuredContent: out.response as unknown as Record<string, unknown>,
      };
    } catch (e) {
      if (e instanceof ApiError && e.status === 429) {
        ctx.httpError ??= e;
        throw new JsonRpcFailure(JsonRpcErrorCode.internalError, e.message);
      }
      if (e instanceof ApiError) return toolError(e.toBody());
      log.error({ err: e, requestId }, 'mcp tools/call failed');
      return toolError(ApiError.internal().toBody());
    }
  });
  return server;
}
