import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DEFAULT_LIMITS, mergeLimits } from '@infer/contracts';
import { ConfigError } from '@infer/runtime';
import { loadLimitsFile } from './limits-file.js';

const dir = mkdtempSync(join(tmpdir(), 'limits-file-'));
const write = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('limits file', () => {
  it('is optional: no file means the spec defaults', () => {
    assert.deepEqual(loadLimitsFile(undefined), {});
    const d = mergeLimits(DEFAULT_LIMITS, {});
    assert.deepEqual(d.key, { requests_per_minute: 60, concurrent: 5 });
    assert.equal(d.models['chat-B']?.tokens_per_minute, 1_500_000);
    assert.equal(d.models.rerank?.requests_per_minute, 1000);
    assert.deepEqual(d.models['chat-G'], {
      requests_per_minute: null,
      concurrent: 5,
      rolling_tokens: { tokens: 400_000_000, window_minutes: 240 },
    });
    assert.deepEqual(d.search, { requests_per_minute: 20, concurrent: 3, requests_per_day: 500 });
    assert.deepEqual(d.images, { requests_per_minute: 20, requests_per_month: 100 });
  });

  it('reads YAML and JSON, and merges field by field over the defaults', () => {
    const yaml = loadLimitsFile(
      write(
        'a.yaml',
        'key:\n  requests_per_minute: 100\nmodels:\n  chat-A: { allowance_tokens: null }\ntiers:\n  premium: { search: { requests_per_day: 1000 } }\n',
      ),
    );
    const merged = mergeLimits(DEFAULT_LIMITS, yaml, yaml.tiers?.premium);
    assert.equal(merged.key.requests_per_minute, 100);
    assert.equal(merged.key.concurrent, 5);
    assert.equal(merged.models['chat-A']?.tokens_per_minute, 1_500_000, 'kept');
    assert.equal(merged.models['chat-A']?.allowance_tokens, null, 'switched off');
    assert.equal(merged.search.requests_per_day, 1000);
    assert.equal(merged.search.requests_per_minute, 20);
    const json = loadLimitsFile(
      write('b.json', '{"lease_ttl_ms": 5000, "images": {"requests_per_month": 5}}'),
    );
    assert.equal(json.lease_ttl_ms, 5000);
    assert.equal(mergeLimits(DEFAULT_LIMITS, json).images.requests_per_month, 5);
  });

  it('refuses a bad file with every bad field named, and a missing file', () => {
    const bad = write(
      'bad.yaml',
      'key:\n  rpm: 3\nsearch: { concurrent: -1 }\ntiers: { gold: {} }\nlease_ttl_ms: 10\n',
    );
    assert.throws(
      () => loadLimitsFile(bad),
      (e: unknown) =>
        e instanceof ConfigError &&
        /key: Unrecognized key: "rpm"/.test(e.message) &&
        /search\.concurrent/.test(e.message) &&
        /tiers/.test(e.message) &&
        /lease_ttl_ms/.test(e.message),
    );
    assert.throws(() => loadLimitsFile(join(dir, 'missing.yaml')), ConfigError);
    assert.throws(() => loadLimitsFile(write('c.yaml', 'key: [')), ConfigError);
  });
});
