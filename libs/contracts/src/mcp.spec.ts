import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  JsonRpcErrorCode,
  JsonRpcErrorResponseSchema,
  JsonRpcMessageSchema,
  JsonRpcNotificationSchema,
  JsonRpcRequestSchema,
  JsonRpcResponseSchema,
  JsonRpcSuccessResponseSchema,
  jsonRpcError,
  jsonRpcResult,
  McpToolCallParamsSchema,
} from './mcp.js';

describe('JSON-RPC envelopes', () => {
  it('parses requests with string, number or null ids, with or without params', () => {
    for (const id of ['a1', 7, null]) {
      const r = JsonRpcRequestSchema.parse({ jsonrpc: '2.0', id, method: 'tools/list' });
      assert.equal(r.id, id);
    }
    const call = JsonRpcRequestSchema.parse({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'web_search', arguments: { query: 'x' } },
    });
    assert.deepEqual(McpToolCallParamsSchema.parse(call.params), {
      name: 'web_search',
      arguments: { query: 'x' },
    });
  });

  it('refuses a wrong version, a missing method, array params and object ids', () => {
    assert.equal(JsonRpcRequestSchema.safeParse({ jsonrpc: '1.0', id: 1, method: 'ping' }).success, false);
    assert.equal(JsonRpcRequestSchema.safeParse({ id: 1, method: 'ping' }).success, false);
    assert.equal(JsonRpcRequestSchema.safeParse({ jsonrpc: '2.0', id: 1 }).success, false);
    assert.equal(
      JsonRpcRequestSchema.safeParse({ jsonrpc: '2.0', id: 1, method: 'ping', params: [1] }).success,
      false,
    );
    assert.equal(
      JsonRpcRequestSchema.safeParse({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }).success,
      false,
    );
  });

  it('tells notifications (no id) from requests', () => {
    const n = JsonRpcMessageSchema.parse({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal('id' in n, false);
    assert.ok(JsonRpcNotificationSchema.safeParse(n).success);
    const r = JsonRpcMessageSchema.parse({ jsonrpc: '2.0', id: 0, method: 'ping' });
    assert.equal('id' in r && r.id, 0);
  });

  it('parses success and error responses', () => {
    const ok = jsonRpcResult(1, { tools: [] });
    assert.deepEqual(JsonRpcSuccessResponseSchema.parse(ok), {
      jsonrpc: '2.0',
      id: 1,
      result: { tools: [] },
    });
    const err = jsonRpcError(null, JsonRpcErrorCode.parseError, 'Parse error');
    assert.deepEqual(err, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    assert.ok(JsonRpcErrorResponseSchema.safeParse(err).success);
    const withData = jsonRpcError('x', JsonRpcErrorCode.invalidParams, 'Invalid params', { param: 'query' });
    assert.deepEqual(JsonRpcErrorResponseSchema.parse(withData).error.data, { param: 'query' });
    assert.ok(JsonRpcResponseSchema.safeParse(ok).success);
    assert.ok(JsonRpcResponseSchema.safeParse(err).success);
    assert.equal(
      JsonRpcErrorResponseSchema.safeParse({ jsonrpc: '2.0', id: 1, error: { code: 'bad', message: 'x' } })
        .success,
      false,
    );
  });

  it('has the standard error codes', () => {
    assert.deepEqual(JsonRpcErrorCode, {
      parseError: -32700,
      invalidRequest: -32600,
      methodNotFound: -32601,
      invalidParams: -32602,
      internalError: -32603,
    });
  });

  it('requires a tool name in tools/call params', () => {
    assert.equal(McpToolCallParamsSchema.safeParse({ arguments: {} }).success, false);
    assert.equal(McpToolCallParamsSchema.safeParse({ name: '' }).success, false);
  });
});
