// Every key one admission touches carries the member's hash tag: on a Redis Cluster one script never
// crosses slots, whatever the key's limits and overrides say.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CatalogEntry, CatalogEntrySchema, DEFAULT_LIMITS, mergeLimits } from '@infer/contracts';
import { redisSlot } from '@infer/rpc';
import { type Check, memberTag, planImages, planModel, planSearch, planSlot, redisKeyOf } from './plan.js';

const entry = (id: string, extra: Record<string, unknown> = {}): CatalogEntry =>
  CatalogEntrySchema.parse({
    id,
    kind: 'chat',
    rank: 1,
    tiers: ['premium'],
    engine: { type: 'simulator' },
    ...extra,
  });

describe('limit plans on a Redis Cluster', () => {
  const subject = {
    keyId: 'key-1',
    memberId: 'member-1',
    tier: 'premium' as const,
    billingAnchor: new Date(Date.UTC(2031, 0, 31)),
    overrides: null,
  };
  const now = Date.UTC(2031, 4, 10, 12);
  // Every kind of limit at once: key rpm and concurrency, a per-model rate, tokens per minute, rolling
  // budget, billing-period allowance, per-model concurrency, search and image budgets.
  const limits = mergeLimits(DEFAULT_LIMITS, {
    models: {
      'chat-G': { requests_per_minute: 10, tokens_per_minute: 100, concurrent: 2, allowance_tokens: 1000 },
    },
  });
  const ctx = { subject, limits, prefix: memberTag('lim:', subject.memberId) };
  const plans: Check[][] = [
    planModel(ctx, entry('chat-G', { allowance: { tokens: 10, period: 'billing_period' } })),
    planModel(ctx, entry('chat-A', { allowance: { tokens: 10, period: 'month' } })),
    planImages(ctx),
    planSearch(ctx),
  ];

  it('puts every key of every plan of a member in the member’s slot', () => {
    const slot = redisSlot('{member-1}');
    for (const checks of plans) {
      assert.ok(checks.length >= 3);
      assert.equal(planSlot(checks, redisSlot, now), slot);
      for (const c of checks) assert.ok(redisKeyOf(c, now).startsWith('lim:{member-1}:'), redisKeyOf(c, now));
    }
    assert.equal(plans[0]!.length, 6, 'rolling, allowance, model rpm, tpm, key and model concurrency');
  });

  it('refuses a layout whose keys span slots, naming them', () => {
    const other = planSearch({
      ...ctx,
      subject: { ...subject, memberId: 'member-2' },
      prefix: memberTag('lim:', 'member-2'),
    });
    assert.throws(
      () => planSlot([...plans[3]!, ...other], redisSlot, now),
      /crosses Redis Cluster hash slots: lim:\{member-1\}.* and lim:\{member-2\}/,
    );
  });
});
