import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '@infer/runtime';
import { loadSearchConfig } from './config.js';

describe('search-service configuration', () => {
  it('defaults to the local index with a 15-minute cache', () => {
    const c = loadSearchConfig({});
    assert.equal(c.SEARCH_ENGINE, 'local');
    assert.equal(c.SEARCH_CACHE_TTL_S, 900);
    assert.equal(c.SEARCH_SEED_ON_START, true);
    assert.deepEqual(c.FETCH_ALLOW_HOSTS, []);
  });

  it('needs the settings of the engine it names', () => {
    assert.throws(
      () => loadSearchConfig({ SEARCH_ENGINE: 'searxng' }),
      (e: Error) => {
        assert.ok(e instanceof ConfigError);
        assert.match(e.message, /SEARXNG_URL: required when SEARCH_ENGINE=searxng/);
        return true;
      },
    );
    assert.throws(() => loadSearchConfig({ SEARCH_ENGINE: 'brave' }), /BRAVE_API_KEY/);
    assert.throws(() => loadSearchConfig({ SEARCH_ENGINE: 'google' }), /SEARCH_ENGINE/);
    assert.throws(
      () => loadSearchConfig({ SEARCH_ENGINE: 'searxng', SEARXNG_URL: 'ftp://x' }),
      /SEARXNG_URL/,
    );
    assert.throws(() => loadSearchConfig({ FETCH_TIMEOUT_MS: 'soon' }), /FETCH_TIMEOUT_MS/);
    const c = loadSearchConfig({
      SEARCH_ENGINE: 'searxng',
      SEARXNG_URL: 'http://searxng:8080/',
      FETCH_ALLOW_HOSTS: 'wiki.internal, 10.0.0.5:8080',
      SEARCH_SEED_ON_START: '0',
    });
    assert.equal(c.SEARXNG_URL, 'http://searxng:8080');
    assert.deepEqual(c.FETCH_ALLOW_HOSTS, ['wiki.internal', '10.0.0.5:8080']);
    assert.equal(c.SEARCH_SEED_ON_START, false);
  });
});
