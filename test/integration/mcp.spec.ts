import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ErrorBodySchema, SearchResponseSchema, WEB_SEARCH_TOOL } from '@infer/contracts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { type SearchService, startSearchService } from '../../apps/search-service/src/app.js';
import { type Stack, startStack } from './harness.js';

interface RpcReply {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown> | null;
}

describe('MCP endpoint (POST /mcp, official MCP SDK client)', () => {
  let stack: Stack;
  let tmp: string;
  let search: SearchService | null = null;
  const prefix = `test.${randomUUID()}.`;
  const clients: Client[] = [];

  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'mcp-it', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${stack.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  async function rpc(
    body: string,
    key: string | null = stack.keys.inference,
    method = 'POST',
  ): Promise<RpcReply> {
    const res = await fetch(`${stack.url}/mcp`, {
      method,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      ...(method === 'POST' ? { body } : {}),
    });
    const text = await res.text();
    let json: Record<string, unknown> | null = null;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // empty body (202)
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'mcp-it-'));
    const limits = join(tmp, 'limits.yaml');
    await writeFile(
      limits,
      'tiers:\n  inference: {search: {requests_per_minute: 1000, concurrent: 20, requests_per_day: 100000}}\n' +
        '  community: {search: {requests_per_minute: 2}}\n',
    );
    stack = await startStack({
      env: { SEARCH_SUBJECT_PREFIX: prefix, LIMITS_ENABLED: '1', LIMITS_FILE: limits },
      services: [
        async (env) => {
          search = await startSearchService({
            env: { ...env, SEARCH_CACHE_PREFIX: `test:mcp:${randomUUID()}`, SEARCH_DOCS_DIR: process.cwd() },
            subjectPrefix: prefix,
          });
          return { stop: async () => search?.stop() };
        },
      ],
    });
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await stack?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('initializes, lists the web_search tool and calls it (official SDK client)', async () => {
    const client = await connect(stack.keys.inference);
    assert.equal(client.getServerVersion()?.name, 'infer-platform');
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: false });
    await client.ping();

    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['web_search'],
    );
    const tool = tools[0]!;
    assert.deepEqual(tool.inputSchema, JSON.parse(JSON.stringify(WEB_SEARCH_TOOL.function.parameters)));
    assert.deepEqual((tool.inputSchema as { required?: string[] }).required, ['query']);
    assert.equal(tool.outputSchema?.type, 'object');

    const result = await client.callTool({
      name: 'web_search',
      arguments: { query: 'web search and an MCP endpoint', count: 3 },
    });
    assert.equal(result.isError, undefined);
    const structured = SearchResponseSchema.parse(result.structuredContent);
    assert.ok(structured.results.length >= 1 && structured.results.length <= 3);
    assert.equal(structured.cached, false);
    const content = result.content as Array<{ type: string; text: string }>;
    assert.equal(content[0]?.type, 'text');
    assert.deepEqual(JSON.parse(content[0]!.text), structured);
    // The same query through POST /v1/search comes from the shared cache.
    const res = await fetch(`${stack.baseURL}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'web search and an MCP endpoint', count: 3 }),
    });
    assert.equal(((await res.json()) as { cached: boolean }).cached, true);
  });

  it('reports bad arguments as a tool error naming the field, and an unknown tool as -32602', async () => {
    const client = await connect(stack.keys.inference);
    const bad = await client.callTool({
      name: 'web_search',
      arguments: { query: 'x', freshness: 'last week' },
    });
    assert.equal(bad.isError, true);
    const err = ErrorBodySchema.parse(JSON.parse((bad.content as Array<{ text: string }>)[0]!.text)).error;
    assert.equal(err.param, 'freshness');
    assert.equal(err.code, 'invalid_request_error');

    const missing = await client.callTool({ name: 'web_search', arguments: {} });
    assert.equal(missing.isError, true);

    await assert.rejects(
      client.callTool({ name: 'fetch_url', arguments: { url: 'http://x' } }),
      (e: unknown) => {
        assert.ok(e instanceof McpError);
        assert.equal(e.code, -32602);
        return true;
      },
    );
  });

  it('refuses a missing or unknown key with 401 and the Error body', async () => {
    const init = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    for (const key of [null, 'sk-inf-not-a-key']) {
      const r = await rpc(init, key);
      assert.equal(r.status, 401);
      assert.equal(ErrorBodySchema.parse(r.json).error.code, 'invalid_api_key');
    }
    const bad = await rpc('{not json', 'sk-inf-not-a-key');
    assert.equal(bad.status, 401, 'the key is checked before the body is read');
    await assert.rejects(connect('sk-inf-wrong'), /401|nauthori|invalid/i);
  });

  it('answers malformed JSON-RPC with a JSON-RPC error and HTTP 200', async () => {
    const expectError = async (body: string, code: number, id: unknown = null) => {
      const r = await rpc(body);
      assert.equal(r.status, 200, `${body} -> ${r.text}`);
      assert.equal(r.json?.jsonrpc, '2.0');
      assert.equal(r.json?.id, id);
      assert.equal((r.json?.error as { code?: number })?.code, code, body);
      assert.equal(typeof (r.json?.error as { message?: unknown })?.message, 'string');
    };
    await expectError('{"jsonrpc": "2.0", "id": 1, "method": ', -32700);
    await expectError('', -32700);
    await expectError('{"hello": "world"}', -32600);
    await expectError('{"jsonrpc": "1.0", "id": 7, "method": "ping"}', -32600, 7);
    await expectError('{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": [1]}', -32600, 8);
    await expectError('[]', -32600);
    await expectError('"just a string"', -32600);
    await expectError('{"jsonrpc": "2.0", "id": 9, "method": "resources/list"}', -32601, 9);
    await expectError(
      '{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"arguments": {}}}',
      -32602,
      'a',
    );
  });

  it('serves stateless requests without a session: tools/list, ping, notifications, no GET stream', async () => {
    const list = await rpc('{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}');
    assert.equal(list.status, 200);
    assert.equal(list.headers.get('mcp-session-id'), null);
    assert.deepEqual(
      (list.json!.result as { tools: Array<{ name: string }> }).tools.map((t) => t.name),
      ['web_search'],
    );
    const ping = await rpc('{"jsonrpc": "2.0", "id": 3, "method": "ping"}');
    assert.deepEqual(ping.json, { jsonrpc: '2.0', id: 3, result: {} });
    const note = await rpc('{"jsonrpc": "2.0", "method": "notifications/initialized"}');
    assert.equal(note.status, 202);
    const get = await rpc('', stack.keys.inference, 'GET');
    assert.equal(get.status, 405);
  });

  it('shares the search budget: a tool call past the rate limit is HTTP 429 with Retry-After', async () => {
    const call = (n: number) =>
      rpc(
        JSON.stringify({
          jsonrpc: '2.0',
          id: n,
          method: 'tools/call',
          params: { name: 'web_search', arguments: { query: 'gateway limits budget' } },
        }),
        stack.keys.community, // 2 searches per minute (the test limits file)
      );
    assert.equal((await call(1)).status, 200);
    const second = await call(2);
    assert.equal(second.status, 200);
    const cached = JSON.parse(
      (second.json!.result as { content: Array<{ text: string }> }).content[0]!.text,
    ) as { cached: boolean };
    assert.equal(cached.cached, true, 'from the cache, and still counted');
    const third = await call(3);
    assert.equal(third.status, 429);
    assert.equal(ErrorBodySchema.parse(third.json).error.code, 'rate_limit_exceeded');
    assert.ok(Number(third.headers.get('retry-after')) >= 1);
    // tools/list does not spend the budget.
    assert.equal(
      (await rpc('{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}', stack.keys.community)).status,
      200,
    );
  });

  it('reports an unavailable search as a tool error', async () => {
    await search?.stop();
    search = null;
    const client = await connect(stack.keys.inference);
    const r = await client.callTool({ name: 'web_search', arguments: { query: 'nobody answers' } });
    assert.equal(r.isError, true);
    const err = ErrorBodySchema.parse(JSON.parse((r.content as Array<{ text: string }>)[0]!.text)).error;
    assert.equal(err.type, 'server_error');
  });
});
