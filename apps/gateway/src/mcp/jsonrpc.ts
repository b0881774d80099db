import {
  JsonRpcErrorCode,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  JsonRpcNotificationSchema,
  JsonRpcRequestSchema,
  JsonRpcResponseSchema,
  jsonRpcError,
} from '@infer/contracts';

/** Most messages one POST may batch (the SDK's own bound is the same order). */
export const MAX_BATCH = 32;

export type CheckedBody = { ok: true; body: unknown } | { ok: false; error: JsonRpcErrorResponse };

function idOf(v: unknown): JsonRpcId {
  const id = (v as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function validMessage(m: unknown): boolean {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return false;
  // A message with an `id` is a request or a response; only one without is a notification (the
  // notification schema alone would accept any id by ignoring it).
  if ('id' in m)
    return JsonRpcRequestSchema.safeParse(m).success || JsonRpcResponseSchema.safeParse(m).success;
  return JsonRpcNotificationSchema.safeParse(m).success;
}

/**
 * Checks a POST /mcp body before the MCP SDK sees it, so that malformed input is a JSON-RPC error
 * answered with HTTP 200 (the spec: protocol-level failures are 200 with a JSON-RPC `error`), where
 * the SDK's transport would answer 400:
 *   not JSON                         -> -32700 Parse error, id null
 *   JSON but not a JSON-RPC message  -> -32600 Invalid Request, with the message's id when readable
 *   an empty or oversized batch      -> -32600
 * `parsed`: Fastify already parsed the body as JSON (application/json); otherwise a string body
 * (text/plain) is parsed here.
 */
export function checkJsonRpcBody(body: unknown, parsed: boolean): CheckedBody {
  let value = body;
  if (!parsed && (typeof value === 'string' || Buffer.isBuffer(value))) {
    try {
      value = JSON.parse(value.toString());
    } catch {
      return {
        ok: false,
        error: jsonRpcError(null, JsonRpcErrorCode.parseError, 'Parse error: the body is not valid JSON.'),
      };
    }
  }
  if (Array.isArray(value)) {
    if (!value.length) {
      return {
        ok: false,
        error: jsonRpcError(null, JsonRpcErrorCode.invalidRequest, 'Invalid Request: empty batch.'),
      };
    }
    if (value.length > MAX_BATCH) {
      return {
        ok: false,
        error: jsonRpcError(
          null,
          JsonRpcErrorCode.invalidRequest,
          `Invalid Request: a batch holds at most ${MAX_BATCH} messages.`,
        ),
      };
    }
    const bad = value.findIndex((m) => !validMessage(m));
    if (bad >= 0) {
      return {
        ok: false,
        error: jsonRpcError(
          idOf(value[bad]),
          JsonRpcErrorCode.invalidRequest,
          `Invalid Request: batch item ${bad} is not a JSON-RPC 2.0 message.`,
        ),
      };
    }
    return { ok: true, body: value };
  }
  if (!validMessage(value)) {
    return {
      ok: false,
      error: jsonRpcError(
        idOf(value),
        JsonRpcErrorCode.invalidRequest,
        'Invalid Request: expected a JSON-RPC 2.0 message {jsonrpc: "2.0", id, method, params}.',
      ),
    };
  }
  return { ok: true, body: value };
}
