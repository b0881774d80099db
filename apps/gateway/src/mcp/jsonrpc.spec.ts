import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkJsonRpcBody, MAX_BATCH } from './jsonrpc.js';

const code = (body: unknown, parsed = true) => {
  const r = checkJsonRpcBody(body, parsed);
  return r.ok ? 'ok' : `${r.error.error.code} id=${String(r.error.id)}`;
};

describe('checkJsonRpcBody', () => {
  it('passes requests, notifications, responses and batches of them', () => {
    assert.equal(code({ jsonrpc: '2.0', id: 1, method: 'ping' }), 'ok');
    assert.equal(
      code({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'web_search' } }),
      'ok',
    );
    assert.equal(code({ jsonrpc: '2.0', method: 'notifications/initialized' }), 'ok');
    assert.equal(code({ jsonrpc: '2.0', id: 2, result: {} }), 'ok');
    assert.equal(
      code([
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', method: 'n' },
      ]),
      'ok',
    );
  });

  it('answers text that is not JSON with -32700 and parses text bodies', () => {
    assert.equal(code('{nope', false), '-32700 id=null');
    assert.equal(code('{"jsonrpc":"2.0","id":3,"method":"ping"}', false), 'ok');
  });

  it('answers JSON that is not JSON-RPC with -32600, keeping a readable id', () => {
    assert.equal(code({ hello: 'world' }), '-32600 id=null');
    assert.equal(code('a JSON string'), '-32600 id=null');
    assert.equal(code(42), '-32600 id=null');
    assert.equal(code(null), '-32600 id=null');
    assert.equal(code({ jsonrpc: '1.0', id: 5, method: 'ping' }), '-32600 id=5');
    assert.equal(code({ jsonrpc: '2.0', id: 'k', method: 'ping', params: 'x' }), '-32600 id=k');
    assert.equal(code({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }), '-32600 id=null');
    assert.equal(code([]), '-32600 id=null');
    assert.equal(code([{ jsonrpc: '2.0', id: 1, method: 'ping' }, { id: 9 }]), '-32600 id=9');
    assert.equal(
      code(Array.from({ length: MAX_BATCH + 1 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }))),
      '-32600 id=null',
    );
  });
});
