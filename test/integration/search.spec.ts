import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ErrorBodySchema, SearchResponseSchema, ToolSchema, WEB_SEARCH_TOOL } from '@infer/contracts';
import { type SearchService, startSearchService } from '../../apps/search-service/src/app.js';
import { type Stack, startStack } from './harness.js';
import { BRAVE_TOKEN, deadPort, startWebFixture, type WebFixture } from './web-fixture.js';

const ADMIN_TOKEN = 'search-admin-token-0123456789';
const MINUTE = 60_000;

interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

describe('web search through the gateway (POST /v1/search)', () => {
  let stack: Stack;
  let web: WebFixture;
  let tmp: string;
  let svc: SearchService | null = null;
  const prefix = `test.${randomUUID()}.`;
  const cachePrefix = `test:search:${randomUUID()}`;
  // The search-service clock (cache expiry, relative freshness); tests move it.
  let now = Date.now();
  const clock = () => now;

  /** Starts a search-service on the stack's database with this engine environment (stopping the last). */
  async function useEngine(env: Record<string, string>): Promise<SearchService> {
    await svc?.stop();
    svc = await startSearchService({
      env: {
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        LOG_LEVEL: 'silent',
        SEARCH_CACHE_PREFIX: cachePrefix,
        SEARCH_DOCS_DIR: process.cwd(),
        FETCH_ALLOW_HOSTS: web.hostPort,
        FETCH_TIMEOUT_MS: '1000',
        FETCH_MAX_BYTES: '200000',
        ...env,
      },
      subjectPrefix: prefix,
      clock,
    });
    return svc;
  }

  async function post(path: string, body: unknown, auth: string | null, raw = false): Promise<Reply> {
    const res = await fetch(`${stack.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(auth ? { authorization: `Bearer ${auth}` } : {}),
      },
      body: raw ? (body as string) : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  }
  const search = (body: unknown, key = stack.keys.inference) => post('/v1/search', body, key);
  const ok = (r: Reply) => {
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return SearchResponseSchema.parse(r.body);
  };
  const apiError = (r: Reply, status: number) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return ErrorBodySchema.parse(r.body).error;
  };
  const ingest = (documents: unknown[]) => post('/admin/search/documents', { documents }, ADMIN_TOKEN);

  before(async () => {
    web = await startWebFixture();
    tmp = await mkdtemp(join(tmpdir(), 'search-it-'));
    const limits = join(tmp, 'limits.yaml');
    // Room for this file's searches on the inference key; a tight rate on the community key.
    await writeFile(
      limits,
      'tiers:\n  inference: {search: {requests_per_minute: 1000, concurrent: 20, requests_per_day: 100000}}\n' +
        '  community: {search: {requests_per_minute: 3}}\n',
    );
    stack = await startStack({
      env: { SEARCH_SUBJECT_PREFIX: prefix, LIMITS_ENABLED: '1', LIMITS_FILE: limits, ADMIN_TOKEN },
    });
  });
  after(async () => {
    await svc?.stop();
    await stack?.close();
    await web?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  describe('local index (the default engine)', () => {
    before(async () => {
      const s = await useEngine({});
      assert.equal(s.engine.name, 'local');
    });

    it('is seeded with the project documentation, so a first search finds something', async () => {
      assert.ok(svc?.seeded && svc.seeded.documents > 10, 'seeded at start');
      const r = ok(await search({ query: 'setup.sh installs PostgreSQL Redis NATS' }));
      assert.equal(r.cached, false);
      assert.ok(r.results.length >= 1 && r.results.length <= 5);
      const top = r.results[0]!;
      assert.match(top.url, /^docs:\/README\.md/);
      assert.equal(top.source, 'project-docs');
      assert.ok(top.title.length > 0 && top.snippet.length > 0);
      assert.equal(top.content, undefined, 'no content without fetch_content');
    });

    it('refuses bad input with the Error body, status 400 and the field in param', async () => {
      const cases: Array<[unknown, string | null]> = [
        [{}, 'query'],
        [{ query: '' }, 'query'],
        [{ query: '   ' }, 'query'],
        [{ query: 42 }, 'query'],
        [{ query: 'x', count: 'ten' }, 'count'],
        [{ query: 'x', count: 2.5 }, 'count'],
        [{ query: 'x', freshness: 'yesterday' }, 'freshness'],
        [{ query: 'x', freshness: '2024-02-30to2024-03-01' }, 'freshness'],
        [{ query: 'x', freshness: '2024-12-31to2024-01-01' }, 'freshness'],
        [{ query: 'x', fetch_content: 'yes' }, 'fetch_content'],
        [[1, 2], null],
      ];
      for (const [body, param] of cases) {
        const e = apiError(await search(body), 400);
        assert.equal(e.param, param, JSON.stringify(body));
        assert.equal(e.type, 'invalid_request_error');
        assert.equal(e.code, 'invalid_request_error');
      }
      const notJson = apiError(await post('/v1/search', '{"query": ', stack.keys.inference, true), 400);
      assert.equal(notJson.code, 'invalid_request_error');
    });

    it('needs an API key (401 invalid_api_key)', async () => {
      assert.equal(apiError(await post('/v1/search', { query: 'x' }, null), 401).code, 'invalid_api_key');
      assert.equal(
        apiError(await post('/v1/search', { query: 'x' }, 'sk-inf-nope'), 401).code,
        'invalid_api_key',
      );
    });

    it('takes documents through the admin API (ADMIN_TOKEN) and finds them', async () => {
      const docs = Array.from({ length: 25 }, (_, i) => ({
        url: `https://zoo.example/wombat/${i}`,
        title: `Wombat fact ${i}`,
        body: `Wombats dig burrows. Fact number ${i} about the wombat.`,
        fetched_at: '2024-03-15T12:00:00Z',
      }));
      const r = await ingest(docs);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body, {
        object: 'search.ingest',
        documents: 25,
        inserted: 25,
        updated: 0,
        unchanged: 0,
      });
      const again = await ingest(docs.slice(0, 2));
      assert.equal(again.body.unchanged, 2);

      const html = await ingest([
        {
          url: 'https://zoo.example/quokka',
          html: '<html><head><title>Quokka</title></head><body><nav>menu</nav><p>The quokka smiles a lot.</p></body></html>',
          source: 'zoo',
        },
      ]);
      assert.equal(html.body.inserted, 1);
      const q = ok(await search({ query: 'quokka smiles' }));
      assert.deepEqual(
        q.results.map((x) => [x.url, x.title, x.source]),
        [['https://zoo.example/quokka', 'Quokka', 'zoo']],
      );

      assert.equal(
        apiError(await post('/admin/search/documents', { documents: docs }, stack.keys.premium), 401).code,
        'invalid_admin_token',
      );
      const bad = apiError(await ingest([{ url: 'not a url', body: 'x' }]), 400);
      assert.equal(bad.param, 'documents[0].url');
      assert.equal(apiError(await ingest([{ url: 'https://a.example' }]), 400).param, 'documents[0].body');
    });

    it('clamps count into 1..20 instead of refusing it', async () => {
      const n = async (count?: number) =>
        ok(await search({ query: 'wombat burrows', ...(count === undefined ? {} : { count }) })).results
          .length;
      assert.equal(await n(), 5);
      assert.equal(await n(1000), 20);
      assert.equal(await n(0), 1);
      assert.equal(await n(-3), 1);
      assert.equal(await n(7), 7);
    });

    it('applies freshness to the documents dates (pd/pw/pm/py by the service clock, ranges by day)', async () => {
      const day = 86_400_000;
      const at = (msAgo: number) => new Date(now - msAgo).toISOString();
      await ingest([
        {
          url: 'https://news.example/1',
          title: 'Numbat news today',
          body: 'numbat sighting',
          fetched_at: at(2 * 3_600_000),
        },
        {
          url: 'https://news.example/2',
          title: 'Numbat news this week',
          body: 'numbat sighting',
          fetched_at: at(3 * day),
        },
        {
          url: 'https://news.example/3',
          title: 'Numbat news this month',
          body: 'numbat sighting',
          fetched_at: at(20 * day),
        },
        {
          url: 'https://news.example/4',
          title: 'Numbat news this year',
          body: 'numbat sighting',
          fetched_at: at(200 * day),
        },
        {
          url: 'https://news.example/5',
          title: 'Numbat news long ago',
          body: 'numbat sighting',
          fetched_at: '2019-06-15T10:00:00Z',
        },
      ]);
      const urls = async (freshness?: string) =>
        ok(await search({ query: 'numbat sighting', count: 20, ...(freshness ? { freshness } : {}) }))
          .results.map((r) => r.url.slice(-1))
          .sort()
          .join('');
      assert.equal(await urls(), '12345');
      assert.equal(await urls('pd'), '1');
      assert.equal(await urls('pw'), '12');
      assert.equal(await urls('pm'), '123');
      assert.equal(await urls('py'), '1234');
      assert.equal(await urls('2019-06-15to2019-06-15'), '5', 'both days of a range are included');
      assert.equal(await urls('2019-06-16to2019-12-31'), '');
    });

    it('fetch_content gives the stored text of local documents', async () => {
      const r = ok(await search({ query: 'quokka smiles', fetch_content: true }));
      assert.equal(r.results[0]?.content, 'The quokka smiles a lot.');
    });

    it('serves identical queries from the cache for ~15 minutes (cached: true), then searches again', async () => {
      const q = { query: 'Wombat  Fact 3', count: 2 };
      assert.equal(ok(await search(q)).cached, false);
      const second = ok(await search({ ...q, query: '  wombat fact 3 ' }));
      assert.equal(second.cached, true, 'same normalized query');
      assert.equal(ok(await search({ ...q, count: 3 })).cached, false, 'another count is another query');
      assert.equal(ok(await search({ ...q, fetch_content: true })).cached, false, 'so is fetch_content');
      assert.equal(ok(await search({ ...q, freshness: 'py' })).cached, false, 'and freshness');
      now += 14 * MINUTE;
      assert.equal(ok(await search(q)).cached, true, 'still cached after 14 minutes');
      now += 2 * MINUTE;
      const miss = ok(await search(q));
      assert.equal(miss.cached, false, 'searched again after 16 minutes');
      assert.deepEqual(miss.results, second.results);
      assert.equal(ok(await search(q)).cached, true);
    });

    it('counts cached answers toward the rate limit (429 with Retry-After)', async () => {
      const q = { query: 'wombat fact 11' };
      const key = stack.keys.community; // 3 searches per minute (the test limits file)
      assert.equal(ok(await search(q, key)).cached, false);
      assert.equal(ok(await search(q, key)).cached, true);
      assert.equal(ok(await search(q, key)).cached, true);
      const r = await search(q, key);
      const e = apiError(r, 429);
      assert.equal(e.code, 'rate_limit_exceeded');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    });

    it('publishes the web_search function schema for model tools (GET /v1/search/tool)', async () => {
      const res = await fetch(`${stack.baseURL}/search/tool`, {
        headers: { authorization: `Bearer ${stack.keys.community}` },
      });
      assert.equal(res.status, 200);
      const tool = (await res.json()) as typeof WEB_SEARCH_TOOL;
      assert.deepEqual(tool, JSON.parse(JSON.stringify(WEB_SEARCH_TOOL)));
      ToolSchema.parse(tool); // usable as is in a chat request's `tools`
      assert.equal(tool.function.name, 'web_search');
      assert.deepEqual(tool.function.parameters.required, ['query']);
    });
  });

  describe('SearXNG engine', () => {
    before(async () => {
      await useEngine({ SEARCH_ENGINE: 'searxng', SEARXNG_URL: `${web.origin}/searxng` });
      web.results = [
        { title: 'Llamas of the Andes', path: '/page/llamas', snippet: 'About llamas.' },
        { title: 'Alpaca &amp; fleece', path: '/page/redirect', snippet: 'About <b>alpacas</b>.' },
        { title: 'Plain', path: '/page/plain', snippet: 'plain text' },
        { title: 'Gone', path: '/page/missing', snippet: '404' },
        { title: 'Image', path: '/page/image', snippet: 'png' },
        { title: 'Huge', path: '/page/huge', snippet: 'big' },
        { title: 'Slow', path: '/page/slow', snippet: 'slow' },
        {
          title: 'Loopback by name',
          path: '',
          url: `http://localhost:${web.port}/page/llamas`,
          snippet: 'ssrf',
        },
        { title: 'Private address', path: '', url: 'http://10.255.255.1/secret', snippet: 'ssrf' },
        { title: 'Duplicate', path: '/page/llamas', snippet: 'same url again' },
        ...Array.from({ length: 15 }, (_, i) => ({
          title: `Filler ${i}`,
          path: `/page/filler-${i}`,
          snippet: 'f',
        })),
      ];
    });

    it('maps SearXNG results (query, time_range, pages) to the spec shape', async () => {
      web.searxngRequests.length = 0;
      const r = ok(await search({ query: 'llamas andes', count: 12, freshness: 'pw' }));
      assert.equal(r.results.length, 12);
      assert.deepEqual(r.results[0], {
        title: 'Llamas of the Andes',
        url: `${web.origin}/page/llamas`,
        snippet: 'About llamas.',
        source: '127.0.0.1',
      });
      assert.equal(r.results[1]?.title, 'Alpaca & fleece');
      assert.equal(r.results[1]?.snippet, 'About alpacas.');
      assert.equal(new Set(r.results.map((x) => x.url)).size, 12, 'one result per URL');
      const first = web.searxngRequests[0]!;
      assert.equal(first.searchParams.get('q'), 'llamas andes');
      assert.equal(first.searchParams.get('format'), 'json');
      assert.equal(first.searchParams.get('time_range'), 'week');
      assert.deepEqual(
        web.searxngRequests.map((u) => u.searchParams.get('pageno')),
        ['1', '2'],
        'second page to fill 12',
      );
    });

    it('fetch_content adds the readable text of the pages it could fetch, and nothing for the others', async () => {
      const hitsBefore = web.pageHits.get('/page/llamas') ?? 0;
      const started = performance.now();
      const r = ok(await search({ query: 'llamas content', count: 9, fetch_content: true }));
      const ms = performance.now() - started;
      const byTitle = new Map(r.results.map((x) => [x.title, x]));
      const llama = byTitle.get('Llamas of the Andes')?.content ?? '';
      assert.match(llama, /LLAMA-FIRST-PARAGRAPH\./);
      assert.match(llama, /Second paragraph\./);
      for (const junk of ['Shop the llama store', 'Copyright llama corp', 'INJECTED'])
        assert.equal(llama.includes(junk), false, junk);
      assert.match(byTitle.get('Alpaca & fleece')?.content ?? '', /ALPACA-TEXT/, 'redirect followed');
      assert.equal(byTitle.get('Plain')?.content, 'PLAIN-TEXT page.\n\nSecond line.');
      for (const t of ['Gone', 'Image', 'Huge', 'Slow', 'Loopback by name', 'Private address']) {
        assert.ok(byTitle.has(t), t);
        assert.equal(byTitle.get(t)?.content, undefined, `${t}: no content`);
      }
      assert.equal(
        (web.pageHits.get('/page/llamas') ?? 0) - hitsBefore,
        1,
        'localhost alias was refused by the SSRF guard',
      );
      assert.ok(ms < 10_000, `bounded by the fetch timeouts (${Math.round(ms)} ms)`);
    });

    it('turns an engine failure into 503 search_unavailable', async () => {
      web.failEngines = true;
      try {
        const e = apiError(await search({ query: 'anything at all' }), 503);
        assert.equal(e.code, 'search_unavailable');
        assert.equal(e.type, 'server_error');
        assert.equal(e.message.includes('500'), false, 'no upstream details');
      } finally {
        web.failEngines = false;
      }
    });
  });

  describe('Brave Search API engine', () => {
    before(async () => {
      await useEngine({
        SEARCH_ENGINE: 'brave',
        BRAVE_API_KEY: BRAVE_TOKEN,
        BRAVE_BASE_URL: `${web.origin}/brave`,
      });
    });

    it('sends the token, count and freshness, and maps web.results', async () => {
      web.braveRequests.length = 0;
      const r = ok(await search({ query: 'brave llamas', count: 3, freshness: '2024-01-01to2024-02-01' }));
      assert.equal(r.results.length, 3);
      assert.deepEqual(r.results[0], {
        title: 'Llamas of the Andes',
        url: `${web.origin}/page/llamas`,
        snippet: 'About llamas. & more',
        source: '127.0.0.1',
      });
      const req = web.braveRequests[0]!;
      assert.equal(req.token, BRAVE_TOKEN);
      assert.equal(req.url.searchParams.get('q'), 'brave llamas');
      assert.equal(req.url.searchParams.get('count'), '3');
      assert.equal(req.url.searchParams.get('freshness'), '2024-01-01to2024-02-01');
    });

    it('a refused token is 503 search_unavailable, not the upstream error', async () => {
      await useEngine({
        SEARCH_ENGINE: 'brave',
        BRAVE_API_KEY: 'wrong-token',
        BRAVE_BASE_URL: `${web.origin}/brave`,
      });
      const e = apiError(await search({ query: 'brave refused' }), 503);
      assert.equal(e.code, 'search_unavailable');
    });
  });

  describe('unreachable engine and no search-service', () => {
    it('an engine on a dead port is 503 search_unavailable', async () => {
      await useEngine({ SEARCH_ENGINE: 'searxng', SEARXNG_URL: `http://127.0.0.1:${await deadPort()}` });
      const e = apiError(await search({ query: 'dead port' }), 503);
      assert.equal(e.code, 'search_unavailable');
      assert.equal(e.type, 'server_error');
    });

    it('without a running search-service the gateway answers 503', async () => {
      await svc?.stop();
      svc = null;
      const e = apiError(await search({ query: 'nobody home' }), 503);
      assert.equal(e.type, 'server_error');
    });
  });
});
