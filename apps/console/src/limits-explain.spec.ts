import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LimitState } from '@infer/contracts';
import { limitTitle, resetSentence, stateSentence, statusText } from './limits-explain.js';

const NOW = Date.UTC(2031, 4, 10, 12, 0, 30);
const state = (over: Partial<LimitState>): LimitState => ({
  name: 'key.requests_per_minute',
  scope: 'key',
  model: null,
  unit: 'requests',
  window: 'minute',
  limit: 1,
  used: 1,
  remaining: 0,
  resets_at: NOW / 1000 + 30,
  status: 429,
  code: 'rate_limit_exceeded',
  ...over,
});

describe('limits in words', () => {
  it('names a limit from its stable name', () => {
    assert.equal(limitTitle('key.requests_per_minute'), 'Requests per minute of the key');
    assert.equal(limitTitle('models.chat-A.tokens_per_minute'), 'Tokens per minute on chat-A');
    assert.equal(limitTitle('search.requests_per_day'), 'Requests per day of web search');
    assert.equal(limitTitle('images.requests_per_month'), 'Requests per month of image generation');
    assert.equal(limitTitle('something.new_limit'), 'new limit');
  });

  it('says when a refused request gets through again, from the live state or the name', () => {
    assert.equal(
      resetSentence('key.requests_per_minute', state({}), NOW),
      'It resets in 30 s, at 2031-05-10 12:01 UTC.',
    );
    assert.equal(
      resetSentence('key.concurrent', state({ window: 'concurrent', resets_at: null }), NOW),
      'A slot frees as soon as one of the requests running now ends.',
    );
    assert.equal(resetSentence('search.requests_per_day', undefined, NOW), 'It resets at midnight UTC.');
    assert.equal(resetSentence('key.requests_per_minute', undefined, NOW), 'It resets within a minute.');
  });

  it('states the live numbers, singular for one', () => {
    assert.equal(stateSentence(state({})), '1 request per minute; 1 used now, 0 left.');
    assert.equal(
      stateSentence(state({ unit: 'tokens', limit: 1_500_000, used: 1_600_000, remaining: -100_000 })),
      '1,500,000 tokens per minute; 1,600,000 used now, 0 left.',
    );
  });

  it('reads a status', () => {
    assert.equal(statusText(429, 'rate_limit_exceeded'), 'rate limited');
    assert.equal(statusText(429, 'insufficient_quota'), 'quota spent');
    assert.equal(statusText(402, 'monthly_cap_reached'), 'allowance spent');
    assert.equal(statusText(503, null), 'server error');
    assert.equal(statusText(400, 'invalid_value'), 'client error');
    assert.equal(statusText(200, null), 'ok');
  });
});
