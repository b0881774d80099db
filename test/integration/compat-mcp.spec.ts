/**
 * MCP clients against POST /mcp: the MCP SDK client (with and without the key), the MCP Inspector CLI
 * (2.x, run offline from node_modules), and the bearer challenge a 401 carries (RFC 6750), which tells
 * OAuth-first clients that the key is a plain bearer token.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WEB_SEARCH_TOOL } from '@infer/contracts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { recordingProxy } from '../support/recording-proxy.js';
import { type Stack, startStack } from './harness.js';

const INSPECTOR = resolve('node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

/** Runs the Inspector CLI to completion (bounded by a deadline), with its own catalog file. */
function inspector(
  args: string[],
  home: string,
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [INSPECTOR, '--cli', ...args], {
      env: {
        ...process.env,
        HOME: home,
        MCP_CATALOG_PATH: join(home, 'mcp.json'),
        NO_COLOR: '1',
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`inspector did not finish within 60 s: ${out} ${err}`));
    }, 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out, err });
    });
  });
}

describe('MCP clients: MCP SDK client, MCP Inspector CLI, the bearer challenge', () => {
  let stack: Stack;
  let home: string;

  before(async () => {
    stack = await startStack();
    home = await mkdtemp(join(tmpdir(), 'compat-inspector-'));
  });
  after(async () => {
    await stack?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('a 401 from /mcp (and the API) carries WWW-Authenticate: Bearer with an error description', async () => {
    const missing = await fetch(`${stack.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(missing.status, 401);
    assert.equal(
      missing.headers.get('www-authenticate'),
      'Bearer realm="infer-platform", error_description="An API key is required; send it as Authorization: Bearer <key>."',
    );
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
    const wrong = await fetch(`${stack.url}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-nope', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.match(
      wrong.headers.get('www-authenticate') ?? '',
      /^Bearer realm="infer-platform", error="invalid_token", error_description="/,
    );
    const malformed = await fetch(`${stack.baseURL}/models`, { headers: { authorization: 'Basic abc' } });
    assert.match(malformed.headers.get('www-authenticate') ?? '', /error="invalid_request"/);
  });

  it('MCP SDK client: lists the tool with the key; without it the connection is refused as unauthorized', async () => {
    const client = new Client({ name: 'compat', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${stack.keys.inference}` } },
      }),
    );
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      [WEB_SEARCH_TOOL.function.name],
    );
    await client.close();
    const anon = new Client({ name: 'compat', version: '1.0.0' });
    await assert.rejects(
      anon.connect(new StreamableHTTPClientTransport(new URL(`${stack.url}/mcp`))),
      /invalid_api_key|API key/,
    );
  });

  it('MCP Inspector CLI: tools/list with the key as a bearer header; a clear failure without it', async () => {
    const ok = await inspector(
      [
        `${stack.url}/mcp`,
        '--transport',
        'http',
        '--method',
        'tools/list',
        '--header',
        `Authorization: Bearer ${stack.keys.inference}`,
      ],
      home,
    );
    assert.equal(ok.code, 0, ok.err);
    const listed = JSON.parse(ok.out) as { tools: Array<{ name: string }> };
    assert.deepEqual(
      listed.tools.map((t) => t.name),
      [WEB_SEARCH_TOOL.function.name],
    );
    const anon = await inspector([`${stack.url}/mcp`, '--transport', 'http', '--method', 'tools/list'], home);
    // Without a key the Inspector reads the bearer challenge and, having no TTY here, stops with its
    // auth_required exit instead of hanging in an OAuth flow.
    assert.notEqual(anon.code, 0);
    assert.match(`${anon.out}\n${anon.err}`, /auth_required/);
  });

  it('behind an HTTP proxy (HTTP_PROXY set), the Inspector reaches the loopback gateway directly', async () => {
    const proxy = await recordingProxy();
    try {
      // The proxy variables only: NO_PROXY is what the test runner gives every test process (loopback).
      const r = await inspector(
        [
          `${stack.url}/mcp`,
          '--transport',
          'http',
          '--method',
          'tools/list',
          '--header',
          `Authorization: Bearer ${stack.keys.inference}`,
        ],
        home,
        proxy.env,
      );
      assert.deepEqual(proxy.attempts, [], 'nothing went through the proxy');
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, new RegExp(WEB_SEARCH_TOOL.function.name));
    } finally {
      await proxy.close();
    }
  });
});
