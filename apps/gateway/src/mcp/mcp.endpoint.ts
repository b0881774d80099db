import { ApiError, JsonRpcErrorCode, type JsonRpcErrorResponse, jsonRpcError } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate } from '../auth/auth.guard.js';
import { KeyCache } from '../auth/key-cache.js';
import { workIdOf } from '../common/request-id.js';
import { sendError } from '../common/send-error.js';
import { LOGGER } from '../infra/tokens.js';
import { SearchGateway } from '../search/search.service.js';
import { checkJsonRpcBody } from './jsonrpc.js';
import type { McpRequestContext } from './mcp.server.js';

/**
 * The MCP SDK (with ajv and zod-to-json-schema, about 150 modules) and our server on it, loaded on the
 * first POST /mcp: a gateway that never serves MCP does not hold them in memory.
 */
let mcpModules: Promise<{
  buildMcpServer: typeof import('./mcp.server.js').buildMcpServer;
  Transport: typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js').WebStandardStreamableHTTPServerTransport;
}> | null = null;
const loadMcp = () =>
  (mcpModules ??= Promise.all([
    import('./mcp.server.js'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  ]).then(([server, http]) => ({
    buildMcpServer: server.buildMcpServer,
    Transport: http.WebStandardStreamableHTTPServerTransport,
  })));

/** Largest POST /mcp body: JSON-RPC messages are small. */
export const MCP_BODY_LIMIT = 1024 * 1024;

/**
 * POST /mcp at the host root: the Model Context Protocol over stateless streamable HTTP, JSON-RPC 2.0
 * (initialize, ping, tools/list, tools/call; one tool, web_search), on the official SDK's server and
 * transport (JSON answers, no session, no server-sent events).
 *
 * Registered on Fastify directly rather than as a Nest controller: Fastify parses the JSON body before
 * any controller, guard or controller-scoped filter runs, and the global error filter would answer a
 * broken body with a 400 Error body. Here a route-level error handler turns it into what the spec asks
 * for protocol-level failures: HTTP 200 with a JSON-RPC `error`. The route still passes the gateway's
 * global hooks (request id, HTTPS policy, metrics, access log); the API key is checked in its own
 * onRequest hook, before the body is read: missing or unknown -> 401 with the Error body.
 *
 * GET and DELETE /mcp (a server-sent-event stream, ending a session) do not exist without sessions:
 * 405 with a JSON-RPC error, which MCP clients take as "no stream offered".
 */
@Injectable()
export class McpEndpoint implements OnModuleInit {
  constructor(
    @Inject(HttpAdapterHost) private readonly host: HttpAdapterHost,
    @Inject(KeyCache) private readonly keys: KeyCache,
    @Inject(SearchGateway) private readonly search: SearchGateway,
    @Inject(LOGGER) private readonly log: Logger,
  ) {}

  onModuleInit(): void {
    const f = this.host.httpAdapter.getInstance<FastifyInstance>();
    const onRequest = async (req: FastifyRequest) => {
      req.auth = await authenticate(req, this.keys);
    };
    const errorHandler = (err: FastifyError, req: FastifyRequest, reply: FastifyReply) =>
      this.onError(err, req, reply);
    f.route({
      method: 'POST',
      url: '/mcp',
      bodyLimit: MCP_BODY_LIMIT,
      onRequest,
      errorHandler,
      handler: (req, reply) => this.post(req, reply),
    });
    f.route({
      method: ['GET', 'DELETE'],
      url: '/mcp',
      onRequest,
      errorHandler,
      handler: async (_req, reply) => {
        void reply
          .code(405)
          .header('allow', 'POST')
          .type('application/json')
          .send(
            jsonRpcError(
              null,
              -32000,
              'Method not allowed: this MCP server is stateless; POST JSON-RPC messages to /mcp.',
            ),
          );
      },
    });
  }

  private sendRpcError(reply: FastifyReply, error: JsonRpcErrorResponse): void {
    void reply.code(200).type('application/json').send(error);
  }

  private onError(err: FastifyError | ApiError, req: FastifyRequest, reply: FastifyReply): void {
    if (err instanceof ApiError) {
      sendError(req, reply, err); // 401 from the key check, 429 ...
      return;
    }
    this.sendRpcError(reply, bodyFailure(err, req));
  }

  private async post(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const auth = req.auth;
    if (!auth) throw ApiError.invalidKey();
    const checked = checkJsonRpcBody(req.body, /\bjson\b/i.test(req.headers['content-type'] ?? ''));
    if (!checked.ok) return this.sendRpcError(reply, checked.error);

    const ctx: McpRequestContext = { auth, requestId: workIdOf(req), httpError: null, calls: 0 };
    const { buildMcpServer, Transport } = await loadMcp();
    const server = buildMcpServer(ctx, this.search, this.log);
    const transport = new Transport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      // The transport insists on these two headers; the body was parsed and checked above, and the
      // answer is JSON whatever the client accepts.
      const headers: Record<string, string> = {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      };
      const version = req.headers['mcp-protocol-version'];
      if (typeof version === 'string') headers['mcp-protocol-version'] = version;
      const res = await transport.handleRequest(
        new Request('http://localhost/mcp', { method: 'POST', headers }),
        {
          parsedBody: checked.body,
        },
      );
      if (ctx.httpError) {
        sendError(req, reply, ctx.httpError);
        return;
      }
      if (res.status === 202) {
        void reply.code(202).send(); // notifications only: accepted, nothing to answer
        return;
      }
      // Transport-level refusals (e.g. an unsupported MCP-Protocol-Version) carry a JSON-RPC error:
      // protocol-level failures are HTTP 200.
      void reply
        .code(200)
        .type('application/json')
        .send(await res.text());
    } finally {
      await server.close().catch(() => undefined);
    }
  }
}

/** A failure of Fastify's body parsing (or anything unexpected) as a JSON-RPC error. */
function bodyFailure(err: FastifyError, req: FastifyRequest): JsonRpcErrorResponse {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return jsonRpcError(null, JsonRpcErrorCode.parseError, 'Parse error: the body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return jsonRpcError(
        null,
        JsonRpcErrorCode.invalidRequest,
        `Invalid Request: the body is larger than ${MCP_BODY_LIMIT} bytes.`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return jsonRpcError(
        null,
        JsonRpcErrorCode.invalidRequest,
        'Invalid Request: send the JSON-RPC message as application/json.',
      );
    default:
      req.log.error({ err }, 'mcp request failed');
      return jsonRpcError(null, JsonRpcErrorCode.internalError, 'Internal error.');
  }
}
