import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { type Stack, startStack } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'infer-it-'));

function httpsGet(
  url: string,
  ca: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HTTPS policy', () => {
  describe('with a certificate: native TLS', () => {
    let stack: Stack;
    let cert: Buffer;
    before(async () => {
      const key = join(dir, 'key.pem');
      const crt = join(dir, 'cert.pem');
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-subj',
          '/CN=localhost',
          '-addext',
          'subjectAltName=IP:127.0.0.1,DNS:localhost',
          '-days',
          '1',
          '-keyout',
          key,
          '-out',
          crt,
        ],
        { stdio: 'ignore' },
      );
      cert = readFileSync(crt);
      stack = await startStack({ env: { TLS_CERT_FILE: crt, TLS_KEY_FILE: key, ALLOW_INSECURE_HTTP: '0' } });
    });
    after(async () => {
      await stack?.close();
    });

    it('serves the API over TLS', async () => {
      assert.match(stack.url, /^https:/);
      const res = await httpsGet(`${stack.baseURL}/models`, cert, {
        authorization: `Bearer ${stack.keys.inference}`,
      });
      assert.equal(res.status, 200);
      assert.equal(JSON.parse(res.body).object, 'list');
      // Over HTTPS every answer carries HSTS (and nosniff), errors too.
      assert.equal(res.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      const denied = await httpsGet(`${stack.baseURL}/models`, cert, {});
      assert.equal(denied.status, 401);
      assert.equal(denied.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains');
    });
  });

  describe('behind a trusted proxy, without development mode', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ env: { TRUSTED_PROXIES: '127.0.0.1', ALLOW_INSECURE_HTTP: '0' } });
    });
    after(async () => {
      await stack?.close();
    });

    it('refuses plain HTTP with 403 https_required', async () => {
      const res = await fetch(`${stack.baseURL}/models`, {
        headers: { authorization: `Bearer ${stack.keys.inference}` },
      });
      assert.equal(res.status, 403);
      const body = (await res.json()) as { error: { code: string; type: string } };
      assert.equal(body.error.code, 'https_required');
    });

    it('honours X-Forwarded-Proto: https from the trusted proxy', async () => {
      const res = await fetch(`${stack.baseURL}/models`, {
        headers: { authorization: `Bearer ${stack.keys.inference}`, 'x-forwarded-proto': 'https' },
      });
      assert.equal(res.status, 200);
    });

    it('keeps probes reachable over plain HTTP', async () => {
      assert.equal((await fetch(`${stack.url}/healthz`)).status, 200);
    });
  });

  describe('X-Forwarded-Proto from an untrusted peer', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ env: { TRUSTED_PROXIES: '10.9.9.9', ALLOW_INSECURE_HTTP: '0' } });
    });
    after(async () => {
      await stack?.close();
    });

    it('is ignored', async () => {
      const res = await fetch(`${stack.baseURL}/models`, {
        headers: { authorization: `Bearer ${stack.keys.inference}`, 'x-forwarded-proto': 'https' },
      });
      assert.equal(res.status, 403);
    });
  });
});

describe('streams and cancellation', () => {
  let stack: Stack;
  before(async () => {
    const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as {
      models: Array<Record<string, unknown>>;
    };
    const slow = catalog.models.find((m) => m.id === 'chat-F');
    assert.ok(slow);
    slow.engine = { type: 'simulator', ttft_ms: 10, itl_ms: 20, default_output_tokens: 400 };
    const file = join(dir, 'slow-catalog.yaml');
    writeFileSync(file, stringify(catalog));
    stack = await startStack({ catalogFile: file, env: { BODY_LIMIT_BYTES: '65536' } });
  });
  after(async () => {
    await stack?.close();
  });

  it('relays chunks as they are produced, not at the end', async () => {
    const started = Date.now();
    const stream = await stack.client('inference').chat.completions.create({
      model: 'chat-F',
      messages: [{ role: 'user', content: 'go' }],
      max_tokens: 30,
      stream: true,
    });
    const arrivals: number[] = [];
    for await (const _ of stream) arrivals.push(Date.now() - started);
    // 30 tokens at 20 ms each: the first chunk must arrive long before the last.
    assert.ok(arrivals.length >= 30);
    assert.ok(
      (arrivals.at(-1) ?? 0) - (arrivals[1] ?? 0) >= 300,
      `spread ${arrivals[1]}..${arrivals.at(-1)}`,
    );
  });

  it('cancels the generation in the service when the client disconnects', async () => {
    const ac = new AbortController();
    const res = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      signal: ac.signal,
      headers: { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-F', messages: [{ role: 'user', content: 'long' }], stream: true }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    assert.equal(stack.chat.rpc.inflightCount, 1, 'the generation is running');
    ac.abort();
    // 400 tokens at 20 ms would take 8 s; the service must let go well before (5 s: slack for a busy machine).
    const deadline = Date.now() + 5000;
    while (stack.chat.rpc.inflightCount > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(stack.chat.rpc.inflightCount, 0);
  });

  it('cancels a non-streamed generation when the client disconnects', async () => {
    const ac = new AbortController();
    const pending = fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      signal: ac.signal,
      headers: { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-F', messages: [{ role: 'user', content: 'long' }] }),
    }).catch(() => null);
    const start = Date.now();
    while (stack.chat.rpc.inflightCount === 0 && Date.now() - start < 10_000)
      await new Promise((r) => setTimeout(r, 10));
    assert.equal(stack.chat.rpc.inflightCount, 1, 'the generation is running');
    ac.abort();
    await pending;
    // 400 tokens at 20 ms would take 8 s; the service must let go well before (5 s: slack for a busy machine).
    const deadline = Date.now() + 5000;
    while (stack.chat.rpc.inflightCount > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(stack.chat.rpc.inflightCount, 0);
  });

  it('answers an oversized body with 413 in the Error shape', async () => {
    const res = await fetch(`${stack.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-F', messages: [{ role: 'user', content: 'x'.repeat(100_000) }] }),
    });
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'request_too_large');
  });
});
