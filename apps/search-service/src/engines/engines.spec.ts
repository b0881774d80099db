import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BraveEngine } from './brave.js';
import { EngineError, type EngineQuery } from './engine.js';
import { SearxngEngine } from './searxng.js';
import { decodeEntities, plainText } from './text.js';

/** A local HTTP server whose answer each test sets: stands in for the upstream APIs. */
let reply: (url: URL, req: IncomingMessage, res: ServerResponse) => void = (_u, _r, res) => res.end();
const seen: URL[] = [];
let server: Server;
let base = '';

const now = new Date('2025-06-15T12:00:00Z');
const q = (over: Partial<EngineQuery> = {}): EngineQuery => ({
  query: 'llamas',
  count: 5,
  now,
  withContent: false,
  ...over,
});
const signal = () => new AbortController().signal;
const json = (res: ServerResponse, body: unknown, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

before(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', base);
    seen.push(url);
    reply(url, req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

describe('SearxngEngine', () => {
  const engine = () =>
    new SearxngEngine({ baseUrl: base, timeoutMs: 1000, engines: 'bing,ddg', language: 'en' });

  it('picks the smallest time_range reaching a date range and drops results dated outside it', async () => {
    seen.length = 0;
    reply = (url, _req, res) =>
      json(res, {
        results:
          url.searchParams.get('pageno') === '1'
            ? [
                {
                  url: 'https://a.example/in',
                  title: 'In',
                  content: 'x',
                  publishedDate: '2025-06-10T00:00:00',
                },
                {
                  url: 'https://a.example/out',
                  title: 'Out',
                  content: 'x',
                  publishedDate: '2025-05-01T00:00:00',
                },
                { url: 'https://a.example/undated', title: 'Undated', content: 'x' },
                { url: 'javascript:alert(1)', title: 'Bad', content: 'x' },
              ]
            : [],
      });
    const r = await engine().search(
      q({
        freshness: '2025-06-09to2025-06-12',
        window: { since: new Date('2025-06-09T00:00:00Z'), until: new Date('2025-06-13T00:00:00Z') },
      }),
      signal(),
    );
    assert.deepEqual(
      r.map((x) => x.title),
      ['In', 'Undated'],
    );
    assert.equal(seen[0]?.searchParams.get('time_range'), 'week');
    assert.equal(seen[0]?.searchParams.get('engines'), 'bing,ddg');
    assert.equal(seen[0]?.searchParams.get('language'), 'en');
    assert.equal(seen.length, 2, 'stops at the first empty page');
  });

  it('reads at most three pages', async () => {
    seen.length = 0;
    let n = 0;
    reply = (_url, _req, res) =>
      json(res, { results: [{ url: `https://a.example/${n++}`, title: 't', content: 'c' }] });
    const r = await engine().search(q({ count: 10 }), signal());
    assert.equal(r.length, 3);
    assert.equal(seen.length, 3);
  });

  it('fails on an error status, a non-JSON answer or a missing results array', async () => {
    for (const [status, body, re] of [
      [403, 'Forbidden', /HTTP 403/],
      [200, '<html>not json</html>', /not JSON/],
      [200, { answers: [] }, /no results array/],
    ] as const) {
      reply = (_url, _req, res) => json(res, body, status);
      await assert.rejects(
        engine().search(q(), signal()),
        (e: Error) => e instanceof EngineError && re.test(e.message),
      );
    }
  });

  it('gives up after its timeout', async () => {
    reply = () => undefined; // never answers
    const slow = new SearxngEngine({ baseUrl: base, timeoutMs: 150 });
    await assert.rejects(slow.search(q(), signal()), /no answer within 150 ms/);
  });
});

describe('BraveEngine', () => {
  const engine = () =>
    new BraveEngine({ apiKey: 'tok', baseUrl: base, timeoutMs: 1000, country: 'de', safesearch: 'strict' });

  it('caps count at 20, passes the settings and maps results', async () => {
    seen.length = 0;
    let token: string | undefined;
    reply = (_url, req, res) => {
      token = req.headers['x-subscription-token'] as string;
      json(res, {
        web: {
          results: [
            {
              title: 'A &amp; B',
              url: 'https://www.a.example/x',
              description: 'one <strong>two</strong>',
              page_age: '2025-01-02T00:00:00',
            },
            { title: 'dup', url: 'https://www.a.example/x', description: 'again' },
          ],
        },
      });
    };
    const r = await engine().search(q({ count: 50 }), signal());
    assert.equal(token, 'tok');
    assert.equal(seen[0]?.pathname, '/res/v1/web/search');
    assert.equal(seen[0]?.searchParams.get('count'), '20');
    assert.equal(seen[0]?.searchParams.get('country'), 'de');
    assert.equal(seen[0]?.searchParams.get('safesearch'), 'strict');
    assert.deepEqual(r, [
      {
        title: 'A & B',
        url: 'https://www.a.example/x',
        snippet: 'one two',
        source: 'a.example',
        publishedAt: new Date('2025-01-02T00:00:00'),
      },
    ]);
  });

  it('treats an answer without web results as empty, and 429 as a failure', async () => {
    reply = (_url, _req, res) => json(res, { type: 'search', query: { original: 'x' } });
    assert.deepEqual(await engine().search(q(), signal()), []);
    reply = (_url, _req, res) => json(res, { type: 'ErrorResponse' }, 429);
    await assert.rejects(engine().search(q(), signal()), /HTTP 429/);
  });
});

describe('text helpers', () => {
  it('decodes entities and drops tags', () => {
    assert.equal(decodeEntities('&lt;a&gt; &#39;x&#x27; &amp;amp; &bogus;'), "<a> 'x' &amp; &bogus;");
    assert.equal(plainText(' <b>bold</b>\n text '), 'bold text');
    assert.equal(plainText(undefined), '');
  });
});
