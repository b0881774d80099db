import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CatalogEntrySchema } from './catalog.js';
import { costOf, formatMoney, MoneySchema, parseMoney, priceTable } from './pricing.js';

describe('money', () => {
  it('reads decimal dollars exactly as nano-dollars, from strings and from JSON/YAML numbers', () => {
    assert.equal(parseMoney('0.15'), 150_000_000);
    assert.equal(parseMoney(0.15), 150_000_000);
    assert.equal(parseMoney(0.1 + 0.2), null); // 0.30000000000000004: more than 9 decimals
    assert.equal(parseMoney('12'), 12_000_000_000);
    assert.equal(parseMoney('0.000000001'), 1);
    assert.equal(parseMoney(1e-7), 100);
    for (const bad of ['-1', '1.0000000001', 'abc', '', '1e3', Number.NaN, -0.5, null])
      assert.equal(parseMoney(bad), null);
    assert.equal(formatMoney(1_500), '0.0000015');
    assert.equal(formatMoney(2_000_000_000n), '2');
    assert.equal(formatMoney(0), '0');
    assert.equal(MoneySchema.parse('0.5'), '0.5');
    assert.equal(MoneySchema.safeParse('1.23456789012').success, false);
  });

  it('prices tokens, images, searches and audio minutes; batch lines at the batch factor; sums without drift', () => {
    const chat = CatalogEntrySchema.parse({
      id: 'm',
      kind: 'chat',
      rank: 1,
      tiers: ['community'],
      engine: { type: 'simulator' },
      batch_price_factor: 0.5,
      pricing: { input_per_million: '0.15', output_per_million: 0.6 },
    });
    const t = priceTable(chat);
    assert.equal(priceTable(chat), t, 'cached per entry');
    // 1000 * 0.15 / 1e6 + 500 * 0.6 / 1e6 dollars = 150 000 + 300 000 nano-dollars
    assert.equal(costOf(t, { kind: 'chat', promptTokens: 1000, completionTokens: 500 }), 450_000);
    assert.equal(
      costOf(t, { kind: 'chat', promptTokens: 1000, completionTokens: 500, batch: true }),
      225_000,
    );
    // 0.1 + 0.2 a million times in integers is exactly 0.3 million.
    let sum = 0;
    for (let i = 0; i < 1_000_000; i++) sum += parseMoney('0.1')! + parseMoney('0.2')!;
    assert.equal(formatMoney(sum), '300000');
    const img = priceTable({ pricing: { per_image: '0.04' } });
    assert.equal(
      costOf(img, { kind: 'image', promptTokens: 0, completionTokens: 0, images: 3 }),
      120_000_000,
    );
    assert.equal(
      costOf(img, { kind: 'image', promptTokens: 0, completionTokens: 0, images: 3, failed: true }),
      0,
    );
    const stt = priceTable({ pricing: { per_audio_minute: '0.006' } });
    // 90 seconds of audio (a transcription's prompt "tokens" are its seconds) at $0.006 a minute.
    assert.equal(costOf(stt, { kind: 'stt', promptTokens: 90, completionTokens: 12 }), 9_000_000);
    const search = priceTable({ pricing: { per_search: '0.005' } });
    assert.equal(costOf(search, { kind: 'search', promptTokens: 0, completionTokens: 0 }), 5_000_000);
    assert.equal(costOf(priceTable({}), { kind: 'chat', promptTokens: 10, completionTokens: 10 }), 0);
    // Large counts go through bigint: still exact.
    const dear = priceTable({ pricing: { input_per_million: '150' } });
    assert.equal(
      costOf(dear, { kind: 'chat', promptTokens: 100_000_000, completionTokens: 0 }),
      15_000_000_000_000,
    );
  });
});
