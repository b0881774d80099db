import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FreshnessSchema, SearchRequestSchema, SearchResponseSchema, WEB_SEARCH_TOOL } from './search.js';
import { rejectParam } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

const q = { query: 'zod v4 release' };

describe('SearchRequestSchema', () => {
  it('defaults count to 5 and fetch_content to false', () => {
    assert.deepEqual(parseOrThrow(SearchRequestSchema, q), {
      query: 'zod v4 release',
      count: 5,
      fetch_content: false,
    });
  });

  it('clamps count into 1..20 instead of refusing it', () => {
    const count = (c: number) => parseOrThrow(SearchRequestSchema, { ...q, count: c }).count;
    assert.equal(count(0), 1);
    assert.equal(count(-7), 1);
    assert.equal(count(1), 1);
    assert.equal(count(12), 12);
    assert.equal(count(20), 20);
    assert.equal(count(21), 20);
    assert.equal(count(1000), 20);
  });

  it('still refuses a count that is not an integer', () => {
    assert.equal(rejectParam(SearchRequestSchema, { ...q, count: 2.5 }), 'count');
    assert.equal(rejectParam(SearchRequestSchema, { ...q, count: 'ten' }), 'count');
  });

  it('requires a non-empty query', () => {
    assert.equal(rejectParam(SearchRequestSchema, {}), 'query');
    assert.equal(rejectParam(SearchRequestSchema, { query: '' }), 'query');
    assert.equal(rejectParam(SearchRequestSchema, { query: '   ' }), 'query');
  });

  it('accepts the freshness keywords and valid ranges', () => {
    for (const f of ['pd', 'pw', 'pm', 'py', '2024-01-01to2024-12-31', '2024-02-29to2024-02-29']) {
      assert.equal(parseOrThrow(SearchRequestSchema, { ...q, freshness: f }).freshness, f);
    }
  });

  it('refuses bad freshness values with param freshness', () => {
    for (const f of [
      'pq',
      'day',
      '',
      '2024-01-01',
      '2024-1-1to2024-12-31',
      '2024-13-01to2024-12-31',
      '2023-02-29to2023-03-01',
      '2024-04-31to2024-05-01',
      '2024-12-31to2024-01-01',
      '2024-01-01 to 2024-12-31',
    ]) {
      assert.equal(rejectParam(SearchRequestSchema, { ...q, freshness: f }), 'freshness', f);
    }
    assert.match(
      FreshnessSchema.safeParse('2024-12-31to2024-01-01').error?.issues[0]?.message ?? '',
      /after/,
    );
  });

  it('checks fetch_content is a boolean', () => {
    assert.equal(parseOrThrow(SearchRequestSchema, { ...q, fetch_content: true }).fetch_content, true);
    assert.equal(rejectParam(SearchRequestSchema, { ...q, fetch_content: 'yes' }), 'fetch_content');
  });

  it('refuses nothing it does not know (a url to fetch is simply dropped)', () => {
    const r = parseOrThrow(SearchRequestSchema, { ...q, url: 'https://example.com' });
    assert.equal('url' in r, false);
  });
});

describe('SearchResponseSchema', () => {
  it('parses results with optional content and the cached flag', () => {
    const r = SearchResponseSchema.parse({
      results: [
        { title: 'T', url: 'https://a', snippet: 's', source: 'a' },
        { title: 'U', url: 'https://b', snippet: 's', source: 'b', content: 'main text' },
      ],
      cached: true,
    });
    assert.equal(r.results[1]?.content, 'main text');
    assert.equal(SearchResponseSchema.safeParse({ results: [] }).success, false);
  });
});

describe('WEB_SEARCH_TOOL', () => {
  const params = WEB_SEARCH_TOOL.function.parameters as {
    type: string;
    properties: Record<string, Record<string, unknown>>;
    required: string[];
  };

  it('is a function tool named web_search with the four parameters, query required', () => {
    assert.equal(WEB_SEARCH_TOOL.type, 'function');
    assert.equal(WEB_SEARCH_TOOL.function.name, 'web_search');
    assert.ok(WEB_SEARCH_TOOL.function.description.length > 10);
    assert.equal(params.type, 'object');
    assert.deepEqual(Object.keys(params.properties).sort(), ['count', 'fetch_content', 'freshness', 'query']);
    assert.deepEqual(params.required, ['query']);
  });

  it('is generated from the request schema (types, default, range, descriptions, no refs)', () => {
    assert.equal(params.properties.query?.type, 'string');
    assert.equal(params.properties.count?.type, 'integer');
    assert.equal(params.properties.count?.default, 5);
    assert.equal(params.properties.count?.minimum, 1);
    assert.equal(params.properties.count?.maximum, 20);
    assert.equal(params.properties.fetch_content?.type, 'boolean');
    assert.equal(params.properties.fetch_content?.default, false);
    assert.equal(typeof params.properties.freshness?.pattern, 'string');
    for (const p of Object.values(params.properties)) assert.equal(typeof p.description, 'string');
    const text = JSON.stringify(WEB_SEARCH_TOOL);
    assert.equal(text.includes('$ref'), false);
    assert.equal(text.includes('$schema'), false);
  });

  it('has a freshness pattern that agrees with the schema on shape', () => {
    const re = new RegExp(params.properties.freshness?.pattern as string);
    assert.ok(re.test('pw'));
    assert.ok(re.test('2024-01-01to2024-02-01'));
    assert.equal(re.test('yesterday'), false);
  });
});
