/**
 * Fuzz test (issue 14): a few thousand generated malformed requests across every endpoint of the spec,
 * from a fixed seed, against the real stack (gateway, chat, embedding, audio, image and search services
 * in-process on the machine's PostgreSQL, Redis and NATS). Asserts for every answer: no 5xx, every error
 * body in the spec's envelope (`{error: {message, type, param, code}}`, JSON-RPC for /mcp's protocol
 * errors), no stack trace, an answer within the deadline (no hang); and afterwards that the stack still
 * answers (no crash).
 *
 * FUZZ_SEED and FUZZ_COUNT override the seed (default 14) and the number of requests (default 3000).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ErrorBodySchema } from '@infer/contracts';
import { Redis } from 'ioredis';
import { PNG } from 'pngjs';
import { type AudioService, startAudioService } from '../../apps/audio-service/src/app.js';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { type ImageService, startImageService } from '../../apps/image-service/src/app.js';
import { type SearchService, startSearchService } from '../../apps/search-service/src/app.js';
import { type Stack, startStack } from '../integration/harness.js';
import {
  type Answer,
  type Case,
  jsonBodyCase,
  runCases,
  send,
  statusLine,
  weirdString,
  weirdValue,
} from '../support/fuzz-support.js';
import { mulberry32, type Rng } from '../support/rng.js';

const SEED = Number(process.env.FUZZ_SEED ?? 14);
const COUNT = Number(process.env.FUZZ_COUNT ?? 2500);
const PARALLEL = 8;
// ---- valid bases, one per JSON endpoint: the fuzzer breaks them ----

const JSON_BASES: Array<{ path: string; body: Record<string, unknown> }> = [
  {
    path: '/v1/chat/completions',
    body: {
      model: 'chat-A',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hello' }] },
      ],
      max_tokens: 4,
      temperature: 0.5,
      stop: ['\n'],
      user: 'fuzz',
      tools: [
        { type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' } } },
      ],
    },
  },
  { path: '/v1/completions', body: { model: 'chat-E', prompt: 'Once upon', max_tokens: 4 } },
  { path: '/v1/embeddings', body: { model: 'embed-model', input: ['a', 'b'], encoding_format: 'float' } },
  {
    path: '/v1/rerank',
    body: { model: 'rerank', query: 'cats', documents: ['cats purr', 'dogs bark'], top_n: 1 },
  },
  { path: '/v2/rerank', body: { model: 'rerank', query: 'cats', documents: [{ text: 'cats purr' }] } },
  { path: '/v1/audio/speech', body: { model: 'tts-model', input: 'Hi.', voice: 'en-female', speed: 1 } },
  {
    path: '/v1/responses',
    body: {
      model: 'chat-E',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
      instructions: 'Be brief.',
      max_output_tokens: 4,
    },
  },
  {
    path: '/v1/responses',
    body: {
      model: 'chat-E',
      input: [
        { role: 'developer', content: 'Be brief.' },
        { type: 'reasoning', summary: [], encrypted_content: 'dev.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
        { type: 'function_call', call_id: 'c1', name: 'exec', namespace: 'shell', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'ok' },
        { type: 'custom_tool_call', call_id: 'c2', name: 'patch', input: 'x' },
        { type: 'custom_tool_call_output', call_id: 'c2', output: 'ok' },
      ],
      tools: [
        { type: 'namespace', name: 'shell', description: 'd', tools: [{ type: 'function', name: 'exec' }] },
        {
          type: 'custom',
          name: 'patch',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' },
        },
      ],
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low', summary: 'auto' },
      previous_response_id: 'resp_unknown',
      truncation: 'disabled',
      store: false,
      max_output_tokens: 4,
    },
  },
  { path: '/v1/images/generations', body: { model: 'image-model', prompt: 'a cat', n: 1, size: '256x256' } },
  { path: '/v1/search', body: { query: 'setup', count: 2, freshness: 'pw' } },
  {
    path: '/mcp',
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'web_search', arguments: { query: 'x' } },
    },
  },
  { path: '/admin/search/documents', body: { documents: [{ url: 'docs:/x', title: 't', text: 'x' }] } },
];

const GET_PATHS = [
  '/v1/models',
  '/v1/models/chat-A',
  '/v1/models/%00',
  '/v1/search/tool',
  '/v1/images/files/nope',
  '/openapi.json',
  '/healthz',
  '/readyz',
  '/metrics',
  '/admin/usage',
  '/admin/keys/x',
  '/admin/queues',
  '/v1/responses/resp_nope',
  '/v1/responses/resp_nope/input_items?limit=abc&order=up&after=%00',
];

// ---- multipart ----

const png = (() => {
  const p = new PNG({ width: 16, height: 16 });
  p.data.fill(200);
  return PNG.sync.write(p);
})();
const wav = (() => {
  const samples = 1600;
  const b = Buffer.alloc(44 + samples * 2);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + samples * 2, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(16000, 24);
  b.writeUInt32LE(32000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(samples * 2, 40);
  return b;
})();

interface Part {
  name?: string | undefined;
  filename?: string;
  type?: string;
  data: Buffer | string;
}

function formBody(boundary: string, parts: Part[], close = true): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let disp = 'Content-Disposition: form-data';
    if (p.name !== undefined) disp += `; name="${p.name}"`;
    if (p.filename !== undefined) disp += `; filename="${p.filename}"`;
    chunks.push(
      Buffer.from(`--${boundary}\r\n${disp}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`),
    );
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data));
    chunks.push(Buffer.from('\r\n'));
  }
  if (close) chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

function multipartCase(r: Rng, auth: string): Case {
  const edits = r.int(2) === 0;
  const path = edits ? '/v1/images/edits' : '/v1/audio/transcriptions';
  const parts: Part[] = edits
    ? [
        { name: 'image', filename: 'a.png', type: 'image/png', data: png },
        { name: 'prompt', data: 'a hat' },
        { name: 'model', data: 'image-model' },
        { name: 'size', data: '256x256' },
      ]
    : [
        { name: 'file', filename: 'a.wav', type: 'audio/wav', data: wav },
        { name: 'model', data: 'stt-model' },
        { name: 'response_format', data: 'json' },
      ];
  const boundary = `----fuzz${r.int(1e9)}`;
  let contentType = `multipart/form-data; boundary=${boundary}`;
  let body: Buffer;
  const kind = r.int(12);
  let name = '';
  switch (kind) {
    case 0:
      name = 'no closing boundary';
      body = formBody(boundary, parts, false);
      break;
    case 1:
      name = 'truncated body';
      body = formBody(boundary, parts);
      body = body.subarray(0, r.int(body.length));
      break;
    case 2:
      name = 'boundary mismatch';
      body = formBody(`${boundary}x`, parts);
      break;
    case 3:
      name = 'no boundary';
      contentType = 'multipart/form-data';
      body = formBody(boundary, parts);
      break;
    case 4: {
      name = 'part without name=';
      const i = r.int(parts.length);
      parts[i] = { ...parts[i]!, name: undefined };
      body = formBody(boundary, parts);
      break;
    }
    case 5: {
      name = 'oversized text field';
      parts.push({
        name: r.pick(['prompt', 'language', 'model', 'user', 'size']),
        data: 'x'.repeat(r.pick([5000, 70_000, 1_100_000])),
      });
      body = formBody(boundary, parts);
      break;
    }
    case 6: {
      name = 'NUL in a field';
      parts.push({ name: r.pick(['prompt', 'language', 'model', 'n', 'temperature']), data: 'a\u0000b' });
      body = formBody(boundary, parts);
      break;
    }
    case 7: {
      name = 'field value mutated';
      const i = r.int(parts.length);
      const v = weirdValue(r);
      parts[i] = { ...parts[i]!, data: typeof v === 'string' ? v : (JSON.stringify(v ?? null) ?? 'null') };
      body = formBody(boundary, parts);
      break;
    }
    case 8:
      name = 'garbage bytes';
      body = r.bytes(r.int(4096) + 1);
      break;
    case 9: {
      name = 'many parts';
      for (let i = 0; i < 40; i++) parts.push({ name: r.pick(['x', 'image', 'file', 'a[]']), data: 'v' });
      body = formBody(boundary, parts);
      break;
    }
    case 10: {
      name = 'weird part headers';
      body = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: ${r.pick(['', 'attachment', 'form-data; name=', 'form-data; name="a"; filename*=bad'])}\r\n${r.pick(['', 'Content-Type: \r\n', 'X: y'.repeat(3000)])}\r\n`,
        ),
        Buffer.from('value\r\n'),
        formBody(boundary, parts),
      ]);
      break;
    }
    default:
      name = 'wrong content-type for the form';
      contentType = r.pick([
        'application/json',
        'text/plain',
        'multipart/mixed; boundary=x',
        'multipart/form-data; boundary=',
      ]);
      body = formBody(boundary, parts);
  }
  return {
    name: `${path} multipart: ${name}`,
    method: 'POST',
    path,
    headers: { authorization: auth, 'content-type': contentType },
    body,
  };
}

const jsonCase = (r: Rng, auth: string, admin: string): Case =>
  jsonBodyCase(
    r,
    JSON_BASES,
    (base) => ({
      authorization: base.path.startsWith('/admin') ? `Bearer ${admin}` : auth,
      'content-type': 'application/json',
    }),
    [
      '',
      'null',
      '[]',
      '"x"',
      '1',
      '{"a":',
      '{"model": "chat-A"}}',
      '\u0000',
      '{'.repeat(5000),
      `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
    ],
    [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json; charset=latin1',
      'multipart/form-data; boundary=x',
      '',
      'application/jsonx',
    ],
  );

function headerCase(r: Rng, auth: string, url: URL): Case {
  const kind = r.int(6);
  const path = r.pick([...JSON_BASES.map((b) => b.path), ...GET_PATHS]);
  const method = GET_PATHS.includes(path) ? 'GET' : 'POST';
  let headerBlock: string;
  let name: string;
  switch (kind) {
    case 0:
      name = 'a 60 kB Authorization header';
      headerBlock = `Authorization: Bearer ${'k'.repeat(60_000)}\r\n`;
      break;
    case 1:
      name = 'many headers';
      headerBlock = Array.from({ length: 3000 }, (_, i) => `X-F${i}: ${'v'.repeat(20)}\r\n`).join('');
      break;
    case 2:
      name = 'odd Authorization';
      headerBlock = `Authorization: ${r.pick([
        'Bearer',
        'Bearer ',
        'Basic eDp5',
        'bearer x y z',
        `Bearer ${weirdString(r)
          .slice(0, 200)
          .replace(/[\r\n]/g, '')}`,
        auth.toLowerCase(),
      ])}\r\n`;
      break;
    case 3:
      name = 'bad Content-Length';
      headerBlock = `Authorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${r.pick(['-1', 'abc', '99999999999999999999', '1, 2'])}\r\n`;
      break;
    case 4:
      name = 'broken chunked encoding';
      headerBlock = `Authorization: ${auth}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n`;
      break;
    default:
      name = 'odd request id and accept';
      headerBlock = `Authorization: ${auth}\r\nX-Request-Id: ${'\u00ff'.repeat(200)}\r\nAccept: ${'*/*,'.repeat(500)}\r\n`;
  }
  const head = `${method} ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n${headerBlock}${kind === 4 ? '' : `\r\n`}`;
  return { name: `${method} ${path}: ${name}`, method, path, headers: {}, raw: Buffer.from(head, 'latin1') };
}

function routeCase(r: Rng, auth: string): Case {
  const path = r.pick([
    ...GET_PATHS,
    ...JSON_BASES.map((b) => b.path),
    '/v1/nope',
    `/v1/models/${'m'.repeat(5000)}`,
    '/v1/chat/completions?x=%zz',
    '/v1/models/%zz',
    '/v1/images/files/%E0%A4%A',
    '/admin/keys/%00',
    '/admin/usage?member=%00&from=garbage&to=-1',
    '/%2e%2e/%2e%2e/etc/passwd',
    `/v1/images/files/${'..%2f'.repeat(20)}`,
    '/v1/search/tool?query=\u00e9',
  ]);
  const method = r.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']);
  const headers: Record<string, string> = { authorization: r.int(4) === 0 ? 'Bearer nope' : auth };
  if (method === 'POST' || method === 'PUT' || method === 'PATCH')
    headers['content-type'] = 'application/json';
  return {
    name: `${method} ${path}`,
    method,
    path,
    headers,
    body: method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? undefined : '{}',
  };
}

function* generate(seed: number, count: number, auth: string, admin: string, url: URL): Generator<Case> {
  const r = mulberry32(seed);
  for (let i = 0; i < count; i++) {
    const k = r.int(20);
    if (k < 11) yield jsonCase(r, auth, admin);
    else if (k < 16) yield multipartCase(r, auth);
    else if (k < 18) yield headerCase(r, auth, url);
    else yield routeCase(r, auth);
  }
}

function judge(c: Case, a: Answer | 'closed'): string | null {
  if (a === 'closed') {
    // A request the HTTP parser cannot frame may be answered by closing the connection only when
    // its body never arrived whole (a broken chunked body): everything else must get an answer.
    return c.raw && /chunked/.test(c.name) ? null : 'connection closed without an answer';
  }
  if (a.status === 0) return 'no HTTP status line';
  if (a.status >= 500) return `${a.status}: ${a.body.toString().slice(0, 300)}`;
  const text = a.body.toString();
  if (/\n\s+at .+:\d+:\d+\)?/.test(text)) return `a stack trace in the body: ${text.slice(0, 300)}`;
  if (a.status < 400 || c.method === 'HEAD') return null;
  if (!/json/.test(a.contentType))
    return `${a.status} with Content-Type '${a.contentType}': ${text.slice(0, 200)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return `${a.status} body is not JSON: ${text.slice(0, 200)}`;
  }
  if (c.path.startsWith('/mcp') && (parsed as { jsonrpc?: unknown }).jsonrpc === '2.0') return null;
  const env = ErrorBodySchema.safeParse(parsed);
  if (!env.success) return `${a.status} body is not the error envelope: ${text.slice(0, 200)}`;
  return null;
}

describe('fuzz: malformed requests across every endpoint', { timeout: 600_000 }, () => {
  let stack: Stack;
  let image: ImageService | undefined;
  let audio: AudioService | undefined;
  let search: SearchService | undefined;
  const id = randomUUID().slice(0, 8);
  const ADMIN_TOKEN = `fuzz-admin-${id}`;

  before(async () => {
    stack = await startStack({
      env: {
        ADMIN_TOKEN,
        SEARCH_SUBJECT_PREFIX: `fuzz${id}.`,
        BULLMQ_PREFIX: `fuzz${id}`,
        IMAGE_STORE_REDIS_PREFIX: `fuzz:${id}:images:`,
        SEARCH_CACHE_PREFIX: `fuzz:${id}:search:`,
      },
      services: [
        (env) => startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
        async (env) => {
          audio = await startAudioService({ env, role: 'all', subjectPrefix: env.MODEL_SUBJECT_PREFIX });
          return audio;
        },
        async (env) => {
          image = await startImageService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX });
          return image;
        },
        async (env) => {
          search = await startSearchService({
            env: { ...env, SEARCH_DOCS_DIR: 'docs' },
            subjectPrefix: `fuzz${id}.`,
          });
          return search;
        },
      ],
    });
  });

  after(async () => {
    await image?.queue.obliterate({ force: true }).catch(() => undefined);
    await audio?.queue.obliterate({ force: true }).catch(() => undefined);
    await stack?.close();
    // This run's images, search cache and queues (its own key prefixes).
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    for (const match of [`fuzz:${id}:*`, `fuzz${id}:*`]) {
      for await (const keys of redis.scanStream({ match, count: 500 }) as AsyncIterable<string[]>) {
        if (keys.length) await redis.del(...keys);
      }
    }
    redis.disconnect();
  });

  it("answers the issue's cases with the right 4xx and param", async () => {
    const url = new URL(stack.url);
    const auth = `Bearer ${stack.keys.premium}`;
    const expectError = async (c: Case, status: number, param: string | null, code?: string) => {
      const a = await send(url, c);
      assert.notEqual(a, 'closed', c.name);
      if (a === 'closed') return;
      assert.equal(a.status, status, `${c.name}: ${a.body.toString().slice(0, 300)}`);
      const e = ErrorBodySchema.parse(JSON.parse(a.body.toString())).error;
      assert.equal(e.param, param, `${c.name}: ${e.message}`);
      if (code) assert.equal(e.code, code, c.name);
    };
    const form = (path: string, body: Buffer, contentType: string): Case => ({
      name: path,
      method: 'POST',
      path,
      headers: { authorization: auth, 'content-type': contentType },
      body,
    });
    const b = 'fuzz-boundary';
    const mp = `multipart/form-data; boundary=${b}`;
    const forms: Array<[string, Part[]]> = [
      [
        '/v1/audio/transcriptions',
        [
          { name: 'file', filename: 'a.wav', type: 'audio/wav', data: wav },
          { name: 'model', data: 'stt-model' },
        ],
      ],
      [
        '/v1/images/edits',
        [
          { name: 'image', filename: 'a.png', type: 'image/png', data: png },
          { name: 'prompt', data: 'a hat' },
        ],
      ],
    ];
    for (const [path, parts] of forms) {
      const whole = formBody(b, parts);
      await expectError(form(path, formBody(b, parts, false), mp), 400, null, 'invalid_request_error');
      await expectError(form(path, whole.subarray(0, whole.length - 30), mp), 400, null);
      await expectError(form(path, formBody(`${b}x`, parts), mp), 400, null);
      await expectError(form(path, whole, 'multipart/form-data'), 400, null);
      const nameless = parts.map((p, i) => (i === 1 ? { ...p, name: undefined } : p));
      await expectError(form(path, formBody(b, nameless), mp), 400, null);
    }
    // Oversized form fields: the field's own limit, or the form's 1 MiB per field.
    await expectError(
      form(
        '/v1/audio/transcriptions',
        formBody(b, [...forms[0]![1], { name: 'prompt', data: 'p'.repeat(5000) }]),
        mp,
      ),
      400,
      'prompt',
    );
    await expectError(
      form(
        '/v1/images/edits',
        formBody(b, [forms[1]![1][0]!, { name: 'prompt', data: 'p'.repeat(1_100_000) }]),
        mp,
      ),
      400,
      'prompt',
    );
    const json = (path: string, body: unknown): Case => ({
      name: path,
      method: 'POST',
      path,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await expectError(json('/v1/search', { query: 'q'.repeat(3_000_000) }), 400, 'query');
    await expectError(json('/v1/search', { query: 'a\u0000b' }), 400, 'query');
    const chat = { model: 'chat-A', messages: [{ role: 'user', content: 'hi' }] };
    await expectError(json('/v1/chat/completions', { ...chat, stop: ['s'.repeat(300)] }), 400, 'stop[0]');
    await expectError(json('/v1/chat/completions', { ...chat, user: 'u'.repeat(300) }), 400, 'user');
    await expectError(json('/v1/images/generations', { prompt: 'p'.repeat(32_001) }), 400, 'prompt');
    await expectError(
      json('/v1/embeddings', { model: 'embed-model', input: 'e'.repeat(100_001) }),
      400,
      'input',
    );
    await expectError(
      json('/v1/rerank', { model: 'rerank', query: 'q', documents: ['ok', 'd'.repeat(100_001)] }),
      400,
      'documents[1]',
    );
    // NUL characters where they could reach PostgreSQL (its text cannot hold them): never a 5xx.
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    for (const c of [
      {
        path: '/admin/search/documents',
        method: 'POST',
        body: JSON.stringify({
          documents: [{ url: 'https://nul.example/a', title: 't\u0000', body: 'b\u0000b' }],
        }),
      },
      {
        path: '/admin/search/documents',
        method: 'DELETE',
        body: JSON.stringify({ urls: ['https://x/\u0000'] }),
      },
      { path: '/admin/keys/%00/limits', method: 'GET' },
      { path: '/admin/usage?member=%00&model=%00&from=%00', method: 'GET' },
      { path: '/v1/models/%00', method: 'GET' },
      { path: '/v1/images/files/%00', method: 'GET' },
    ]) {
      const a = await send(url, { name: `${c.method} ${c.path}`, headers: admin, ...c });
      assert.ok(a !== 'closed' && a.status < 500, `${c.method} ${c.path}: ${a === 'closed' ? a : a.body}`);
    }
    // Headers past Node's 16 KiB: 431 in the envelope.
    const big: Case = {
      name: '60 kB Authorization',
      method: 'GET',
      path: '/v1/models',
      headers: {},
      raw: Buffer.from(
        `GET /v1/models HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\nAuthorization: Bearer ${'k'.repeat(60_000)}\r\n\r\n`,
      ),
    };
    await expectError(big, 431, null, 'request_header_fields_too_large');
    // Two Host headers (Node keeps the first): refused like the other framing errors, connection closed.
    const twoHosts: Case = {
      name: 'duplicate Host',
      method: 'GET',
      path: '/v1/models',
      headers: {},
      raw: Buffer.from(
        `GET /v1/models HTTP/1.1\r\nHost: ${url.host}\r\nhost: evil.example\r\nConnection: close\r\nAuthorization: ${auth}\r\n\r\n`,
      ),
    };
    await expectError(twoHosts, 400, null, 'invalid_request_error');
    await expectError(
      {
        name: 'long path param',
        method: 'GET',
        path: `/v1/models/${'m'.repeat(200)}`,
        headers: { authorization: auth },
      },
      414,
      null,
      'uri_too_long',
    );
  });

  it(`answers ${COUNT} generated malformed requests (seed ${SEED}) with 4xx envelopes, never a 5xx or a hang`, async () => {
    const url = new URL(stack.url);
    const auth = `Bearer ${stack.keys.premium}`;
    const run = await runCases(url, generate(SEED, COUNT, auth, ADMIN_TOKEN, url), PARALLEL, judge);
    console.log(
      `fuzz: ${run.sent} requests in ${run.seconds.toFixed(1)} s; statuses ${statusLine(run.statuses)}`,
    );
    assert.equal(run.sent, COUNT);
    assert.deepEqual(run.bad, [], `${run.bad.length} kinds of bad answer`);

    // Still alive: the stack answers a normal request after the storm.
    const models = await fetch(`${stack.url}/v1/models`, { headers: { authorization: auth } });
    assert.equal(models.status, 200);
    const chat = await stack.client('premium').chat.completions.create({
      model: 'chat-A',
      messages: [{ role: 'user', content: 'still there?' }],
      max_tokens: 4,
    });
    assert.ok(chat.choices[0]);
  });
});
