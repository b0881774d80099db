import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '@infer/telemetry';
import { addContent, type ContentOptions, capText } from './content.js';

const log = createLogger('content-test', 'silent');

describe('fetch_content', () => {
  let server: Server;
  let origin = '';
  let hostPort = '';
  const opts = (over: Partial<ContentOptions> = {}): ContentOptions => ({
    timeoutMs: 1000,
    maxBytes: 100_000,
    maxRedirects: 2,
    concurrency: 2,
    maxChars: 10_000,
    allowHosts: [hostPort],
    totalTimeoutMs: 5_000,
    ...over,
  });
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/article') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<title>A</title><p>Hello article text.</p>');
      } else if (req.url === '/json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    origin = `http://127.0.0.1:${port}`;
    hostPort = `127.0.0.1:${port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const result = (url: string, content?: string) => ({
    title: 't',
    url,
    snippet: 's',
    source: 'x',
    ...(content !== undefined ? { content } : {}),
  });

  it('extracts pages, keeps engine text, and leaves failures without content', async () => {
    const out = await addContent(
      [
        result(`${origin}/article`),
        result(`${origin}/json`),
        result(`${origin}/missing`),
        result('https://stored.example', 'stored body'),
      ],
      opts(),
      new AbortController().signal,
      log,
    );
    assert.equal(out[0]?.content, 'Hello article text.');
    assert.equal('content' in out[1]!, false, 'not HTML or text');
    assert.equal('content' in out[2]!, false, '404');
    assert.equal(out[3]?.content, 'stored body');
  });

  it('refuses loopback addresses unless the operator allows the host (SSRF guard)', async () => {
    const out = await addContent(
      [result(`${origin}/article`)],
      opts({ allowHosts: [] }),
      new AbortController().signal,
      log,
    );
    assert.equal(out[0]?.content, undefined);
  });

  it('caps long text at a boundary', () => {
    assert.equal(capText('short', 10), 'short');
    assert.equal(capText('one two three four five', 16), 'one two three …');
    assert.equal(capText('aaaa bbbb cccc dddd.\n\neeee ffff', 24), 'aaaa bbbb cccc dddd. …');
    assert.equal(capText('x'.repeat(30), 10), `${'x'.repeat(10)} …`);
  });
});
