import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_LIMITS, type LimitsOverride } from '@infer/contracts';
import { buildOverrides, initialRow, limitRows, tierText } from './limits-form.js';

const tier: LimitsOverride = {
  ...DEFAULT_LIMITS,
  models: { 'chat-A': { tokens_per_minute: 1_500_000, allowance_tokens: 3_000_000_000 } },
};

describe('limit editor model', () => {
  const rows = limitRows(tier);
  const def = (path: string) => {
    const d = rows.find((r) => r.path.join('.') === path);
    assert.ok(d, path);
    return d;
  };

  it('has a row per overridable limit, the tier models included, and says what the tier gives', () => {
    assert.ok(rows.some((r) => r.state === 'key.budget_per_month'));
    assert.equal(tierText(tier, def('key.requests_per_minute')), '60');
    assert.equal(tierText(tier, def('budget.key_per_month')), 'unlimited');
    assert.equal(tierText(tier, def('models.chat-A.requests_per_minute')), 'the key-wide limit');
    assert.equal(tierText(tier, def('models.chat-A.allowance_tokens')), '3,000,000,000');
  });

  it('reads the modes from the overrides and writes them back, keeping what the form does not show', () => {
    const existing: LimitsOverride = {
      key: { requests_per_minute: 7, concurrent: null },
      models: { 'chat-G': { rolling_tokens: { tokens: 5, window_minutes: 60 } } },
    };
    assert.deepEqual(initialRow(existing, ['key', 'requests_per_minute']), { mode: 'value', value: '7' });
    assert.deepEqual(initialRow(existing, ['key', 'concurrent']), { mode: 'unlimited', value: '' });
    assert.deepEqual(initialRow(existing, ['search', 'concurrent']), { mode: 'inherit', value: '' });
    const { limits, errors } = buildOverrides(existing, [
      { def: def('key.requests_per_minute'), row: { mode: 'inherit', value: '7' } },
      { def: def('key.concurrent'), row: { mode: 'inherit', value: '' } },
      { def: def('budget.key_per_month'), row: { mode: 'value', value: '12.50' } },
      { def: def('models.chat-A.tokens_per_minute'), row: { mode: 'unlimited', value: '' } },
    ]);
    assert.deepEqual(errors, {});
    assert.deepEqual(limits, {
      budget: { key_per_month: '12.50' },
      models: {
        'chat-G': { rolling_tokens: { tokens: 5, window_minutes: 60 } },
        'chat-A': { tokens_per_minute: null },
      },
    });
  });

  it('names a bad value by its param in a sentence, and is null when nothing is overridden', () => {
    const bad = buildOverrides(null, [
      { def: def('key.requests_per_minute'), row: { mode: 'value', value: '-1' } },
      { def: def('budget.key_per_month'), row: { mode: 'value', value: '1.2345678901' } },
    ]);
    assert.equal(
      bad.errors['limits.key.requests_per_minute'],
      'Requests per minute must be a whole number, 0 or more.',
    );
    assert.match(bad.errors['limits.budget.key_per_month'] ?? '', /amount of dollars/);
    assert.equal(
      buildOverrides({ key: { concurrent: 2 } }, [
        { def: def('key.concurrent'), row: { mode: 'inherit', value: '' } },
      ]).limits,
      null,
    );
  });
});
