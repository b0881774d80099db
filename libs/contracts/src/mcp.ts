import { z } from 'zod';

/** Standard JSON-RPC 2.0 error codes. */
export const JsonRpcErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;
export type JsonRpcErrorCodeValue = (typeof JsonRpcErrorCode)[keyof typeof JsonRpcErrorCode];

/** Methods the /mcp endpoint serves. */
export const MCP_METHODS = ['initialize', 'tools/list', 'tools/call', 'ping'] as const;
export type McpMethod = (typeof MCP_METHODS)[number];

export const JsonRpcIdSchema = z.union([z.string(), z.number(), z.null()]);
export type JsonRpcId = z.infer<typeof JsonRpcIdSchema>;

const jsonrpc = z.literal('2.0');
const params = z.record(z.string(), z.unknown()).optional();

export const JsonRpcRequestSchema = z
  .object({ jsonrpc, id: JsonRpcIdSchema, method: z.string().min(1), params })
  .meta({ id: 'JsonRpcRequest' });
export type JsonRpcRequest = z.infer<typeof JsonRpcRequestSchema>;

/** A request without `id`: no response is sent. */
export const JsonRpcNotificationSchema = z
  .object({ jsonrpc, method: z.string().min(1), params })
  .meta({ id: 'JsonRpcNotification' });
export type JsonRpcNotification = z.infer<typeof JsonRpcNotificationSchema>;

export const JsonRpcErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type JsonRpcErrorObject = z.infer<typeof JsonRpcErrorObjectSchema>;

export const JsonRpcSuccessResponseSchema = z
  .object({ jsonrpc, id: JsonRpcIdSchema, result: z.unknown() })
  .meta({ id: 'JsonRpcSuccessResponse' });
export type JsonRpcSuccessResponse = z.infer<typeof JsonRpcSuccessResponseSchema>;

/** Protocol-level failures; `id` is null when the request's id could not be read. */
export const JsonRpcErrorResponseSchema = z
  .object({ jsonrpc, id: JsonRpcIdSchema, error: JsonRpcErrorObjectSchema })
  .meta({ id: 'JsonRpcErrorResponse' });
export type JsonRpcErrorResponse = z.infer<typeof JsonRpcErrorResponseSchema>;

export const JsonRpcResponseSchema = z
  .union([JsonRpcSuccessResponseSchema, JsonRpcErrorResponseSchema])
  .meta({ id: 'JsonRpcResponse' });
export type JsonRpcResponse = z.infer<typeof JsonRpcResponseSchema>;

/**
 * What a client may POST to /mcp: a request (has `id`) or a notification (no `id`). Check
 * `'id' in msg` to tell them apart: the request schema comes first, so a message with an id parses
 * as a request.
 */
export const JsonRpcMessageSchema = z
  .union([JsonRpcRequestSchema, JsonRpcNotificationSchema])
  .meta({ id: 'JsonRpcMessage' });
export type JsonRpcMessage = z.infer<typeof JsonRpcMessageSchema>;

/** `tools/call` params (the spec's `{name, arguments}`). */
export const McpToolCallParamsSchema = z.object({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
});
export type McpToolCallParams = z.infer<typeof McpToolCallParamsSchema>;

export function jsonRpcResult(id: JsonRpcId, result: unknown): JsonRpcSuccessResponse {
  return { jsonrpc: '2.0', id, result };
}

export function jsonRpcError(
  id: JsonRpcId,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}
