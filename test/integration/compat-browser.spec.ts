/**
 * Browsers: a real page in headless Chromium (Debian's `chromium`, driven by playwright-core; never a
 * browser download) calls the API cross-origin, the way a browser app or the openai SDK with
 * `dangerouslyAllowBrowser` does: preflights answered before auth, chat (unary and streamed) and the
 * Responses event stream read by the SDK in the page, a 401 body readable by the page, the exposed
 * headers, and an origin outside CORS_ORIGINS blocked by the browser.
 *
 * Needs /usr/bin/chromium (scripts/test.sh installs the Debian package when it is missing).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium } from 'playwright-core';
import { chromiumOptions, noChromium } from '../support/browser.js';
import { type Stack, startStack } from './harness.js';

const OPENAI_DIR = resolve('node_modules/openai');

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>compat</title></head>
<body><script type="module">
import OpenAI from '/openai/index.mjs';
window.OpenAI = OpenAI;
window.ready = true;
</script></body></html>`;

/** A static page server on its own port (so its origin differs from the gateway's). */
async function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/' || url.pathname === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      return;
    }
    if (url.pathname.startsWith('/openai/')) {
      const file = normalize(join(OPENAI_DIR, url.pathname.slice('/openai/'.length)));
      if (!file.startsWith(OPENAI_DIR) || extname(file) !== '.mjs') {
        res.writeHead(404).end();
        return;
      }
      try {
        const body = await readFile(file);
        res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(body);
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('browsers: cross-origin calls from a real page (headless Chromium)', {
  skip: noChromium,
}, () => {
  let stack: Stack;
  let allowed: { server: Server; origin: string };
  let other: { server: Server; origin: string };
  let browser: BrowserContext;
  let profile: string;

  before(async () => {
    allowed = await pageServer();
    other = await pageServer();
    stack = await startStack({ env: { CORS_ORIGINS: `${allowed.origin},https://app.example.com` } });
    profile = await mkdtemp(join(tmpdir(), 'compat-chromium-'));
    // A fresh profile per run (launchPersistentContext takes the user-data-dir itself).
    browser = await chromium.launchPersistentContext(profile, chromiumOptions);
  });

  after(async () => {
    await browser?.close();
    await stack?.close();
    allowed?.server.close();
    other?.server.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  async function open(origin: string) {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true, null, {
      timeout: 20_000,
    });
    return page;
  }

  it('the openai SDK in the page (dangerouslyAllowBrowser): chat, streaming, Responses events', async () => {
    const page = await open(allowed.origin);
    const out = await page.evaluate(
      async ({ baseURL, key }) => {
        type Ctor = new (
          o: object,
        ) => {
          chat: {
            completions: {
              create(
                b: object,
              ): Promise<{ choices: { message: { content: string } }[]; [k: string]: unknown }>;
            };
          };
          responses: {
            stream(b: object): {
              on(e: string, f: (x: { delta: string }) => void): void;
              finalResponse(): Promise<{ output_text: string }>;
            };
          };
        };
        const OpenAI = (globalThis as unknown as { OpenAI: Ctor }).OpenAI;
        const client = new OpenAI({ baseURL, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
        const unary = await client.chat.completions.create({
          model: 'chat-A',
          messages: [{ role: 'user', content: 'Say hello' }],
        });
        const streamed = (await client.chat.completions.create({
          model: 'chat-A',
          messages: [{ role: 'user', content: 'Say hello' }],
          stream: true,
        })) as unknown as AsyncIterable<{ choices: { delta: { content?: string } }[] }>;
        let text = '';
        let chunks = 0;
        for await (const c of streamed) {
          chunks++;
          text += c.choices[0]?.delta.content ?? '';
        }
        const rs = client.responses.stream({ model: 'chat-F', input: 'Say hello' });
        let deltas = '';
        rs.on('response.output_text.delta', (e) => {
          deltas += e.delta;
        });
        const final = await rs.finalResponse();
        return {
          unary: unary.choices[0]?.message.content ?? '',
          text,
          chunks,
          deltas,
          final: final.output_text,
        };
      },
      { baseURL: stack.baseURL, key: stack.keys.inference },
    );
    assert.ok(out.unary.length > 0);
    assert.ok(out.chunks > 2 && out.text.length > 0, 'streamed chat read in the page');
    assert.ok(out.deltas.length > 0);
    assert.equal(out.final, out.deltas);
    await page.close();
  });

  it('raw fetch: a 401 body and the exposed headers are readable; another origin is blocked', async () => {
    const page = await open(allowed.origin);
    const seen = await page.evaluate(async (url) => {
      const r = await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer nope' } });
      return {
        status: r.status,
        body: await r.json(),
        requestId: r.headers.get('x-request-id'),
        challenge: r.headers.get('www-authenticate'),
      };
    }, stack.url);
    assert.equal(seen.status, 401);
    assert.equal((seen.body as { error: { code: string } }).error.code, 'invalid_api_key');
    assert.ok(seen.requestId, 'x-request-id is exposed');
    assert.match(seen.challenge ?? '', /^Bearer /);
    await page.close();

    const blocked = await open(other.origin);
    const result = await blocked.evaluate(
      async ({ url, key }) => {
        try {
          await fetch(`${url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'chat-A', messages: [{ role: 'user', content: 'hi' }] }),
          });
          return 'read';
        } catch (e) {
          return (e as Error).name;
        }
      },
      { url: stack.url, key: stack.keys.inference },
    );
    assert.equal(result, 'TypeError', 'the browser refuses the response to an origin not in CORS_ORIGINS');
    await blocked.close();
  });

  it('preflight over plain HTTP: 204 before auth, with the allowed origin, methods and asked headers', async () => {
    const r = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: allowed.origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-stainless-lang',
      },
    });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('access-control-allow-origin'), allowed.origin);
    assert.match(r.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.equal(
      r.headers.get('access-control-allow-headers'),
      'authorization,content-type,x-stainless-lang',
    );
    const mcp = await fetch(`${stack.url}/mcp`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    assert.equal(mcp.status, 204);
    assert.equal(mcp.headers.get('access-control-allow-origin'), 'https://app.example.com');
    const refused = await fetch(`${stack.baseURL}/models`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example.net', 'access-control-request-method': 'GET' },
    });
    assert.equal(refused.headers.get('access-control-allow-origin'), null);
    // Answers (errors too) are never sniffed; plain HTTP (development mode) gets no HSTS.
    const answer = await fetch(`${stack.baseURL}/models`, { headers: { origin: allowed.origin } });
    assert.equal(answer.status, 401);
    assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(answer.headers.get('strict-transport-security'), null);
    assert.equal(answer.headers.get('access-control-allow-origin'), allowed.origin);
  });
});
