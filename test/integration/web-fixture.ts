/**
 * A tiny local web for the search tests, on 127.0.0.1 (a random port), stopped by close():
 *   - pages for fetch_content: articles, a redirect, a 404, an image, an oversized page, a slow page;
 *   - FAKE SearXNG (`/searxng/search`) and FAKE Brave (`/brave/res/v1/web/search`): test doubles of
 *     the two upstream JSON APIs, answering like the real ones with results that point at the pages
 *     above. They exist to test our engine adapters (request parameters, result mapping, failures);
 *     they are not search engines.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const para = (s: string) =>
  `<p>${s} ${'Llamas are domesticated South American camelids, used as pack animals by Andean cultures. '.repeat(4)}</p>`;

export const LLAMA_PAGE = `<!doctype html><html><head><title>Llamas of the Andes</title></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop the llama store</a></nav>
<article><h1>Llamas of the Andes</h1>${para('LLAMA-FIRST-PARAGRAPH.')}${para('Second paragraph.')}</article>
<footer>Copyright llama corp</footer><script>document.write('INJECTED')</script></body></html>`;

export const ALPACA_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Alpaca fleece</title></head><body>
<main><h1>Alpaca fleece</h1>${para('ALPACA-TEXT: fleece is fine and warm.')}</main></body></html>`;

export interface FixtureResult {
  title: string;
  path: string;
  snippet: string;
  /** Absolute URL instead of a path on the fixture. */
  url?: string;
  publishedDate?: string;
}

export interface WebFixture {
  origin: string;
  /** `127.0.0.1:<port>`, for FETCH_ALLOW_HOSTS. */
  hostPort: string;
  port: number;
  /** What the fake engines answer (paths are made absolute on this fixture). */
  results: FixtureResult[];
  /** Make the fake engines answer HTTP 500. */
  failEngines: boolean;
  searxngRequests: URL[];
  braveRequests: Array<{ url: URL; token: string | undefined }>;
  pageHits: Map<string, number>;
  close(): Promise<void>;
}

export const BRAVE_TOKEN = 'test-brave-token';

export async function startWebFixture(): Promise<WebFixture> {
  const sockets = new Set<import('node:net').Socket>();
  const fx: WebFixture = {
    origin: '',
    hostPort: '',
    port: 0,
    results: [],
    failEngines: false,
    searxngRequests: [],
    braveRequests: [],
    pageHits: new Map(),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const abs = (r: FixtureResult) => r.url ?? `${fx.origin}${r.path}`;
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', fx.origin);
    if (url.pathname.startsWith('/page/'))
      fx.pageHits.set(url.pathname, (fx.pageHits.get(url.pathname) ?? 0) + 1);
    switch (url.pathname) {
      case '/page/llamas':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return res.end(LLAMA_PAGE);
      case '/page/alpacas':
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(ALPACA_PAGE);
      case '/page/plain':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end('PLAIN-TEXT page.\n\n\nSecond line.');
      case '/page/redirect':
        res.writeHead(302, { location: '/page/alpacas' });
        return res.end();
      case '/page/missing':
        res.writeHead(404, { 'content-type': 'text/html' });
        return res.end('<p>not here</p>');
      case '/page/image':
        res.writeHead(200, { 'content-type': 'image/png' });
        return res.end(Buffer.alloc(64));
      case '/page/huge':
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`<html><body><p>${'x'.repeat(400_000)}</p></body></html>`);
      case '/page/slow': {
        const t = setTimeout(() => {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end('<p>too late</p>');
        }, 5_000);
        res.on('close', () => clearTimeout(t));
        return;
      }
      case '/searxng/search': {
        fx.searxngRequests.push(url);
        if (fx.failEngines) return json(res, 500, { error: 'engine down' });
        if (url.searchParams.get('format') !== 'json') return json(res, 403, { error: 'format' });
        const page = Number(url.searchParams.get('pageno') ?? '1');
        const slice = fx.results.slice((page - 1) * 10, page * 10);
        return json(res, 200, {
          query: url.searchParams.get('q'),
          number_of_results: fx.results.length,
          results: slice.map((r) => ({
            url: abs(r),
            title: r.title,
            content: r.snippet,
            engine: 'fake',
            engines: ['fake'],
            score: 1,
            ...(r.publishedDate ? { publishedDate: r.publishedDate } : {}),
          })),
        });
      }
      case '/brave/res/v1/web/search': {
        const token = req.headers['x-subscription-token'];
        fx.braveRequests.push({ url, token: typeof token === 'string' ? token : undefined });
        if (fx.failEngines) return json(res, 503, { type: 'ErrorResponse' });
        if (token !== BRAVE_TOKEN)
          return json(res, 401, { type: 'ErrorResponse', error: { code: 'SUBSCRIPTION_TOKEN_INVALID' } });
        const count = Number(url.searchParams.get('count') ?? '20');
        return json(res, 200, {
          type: 'search',
          web: {
            type: 'search',
            results: fx.results.slice(0, count).map((r) => ({
              title: r.title,
              url: abs(r),
              description: `<strong>${r.snippet}</strong> &amp; more`,
              profile: { name: 'Fixture' },
              meta_url: { hostname: new URL(abs(r)).hostname },
            })),
          },
        });
      }
      default:
        res.writeHead(404);
        return res.end();
    }
  };
  const server: Server = createServer(handler);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  server.unref();
  const port = (server.address() as AddressInfo).port;
  fx.port = port;
  fx.hostPort = `127.0.0.1:${port}`;
  fx.origin = `http://127.0.0.1:${port}`;
  return fx;
}

/** A port nothing listens on (an engine that is down). */
export async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
