import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldOfParam, lifecycleBody, lifecycleOf } from './key-form.js';

const NOW = Date.UTC(2031, 0, 10, 12, 0, 0);

describe('key lifecycle form', () => {
  it('makes the request body: a duration, a UTC date, the ticked models, the address blocks', () => {
    const l = { ...lifecycleOf(), expiry: 'in' as const, expiresIn: '30d', models: ['chat-A'] };
    assert.deepEqual(lifecycleBody({ ...l, ips: '10.0.0.0/8, 2001:db8::/32\n127.0.0.1' }, NOW), {
      body: {
        expires_in: '30d',
        allowed_models: ['chat-A'],
        allowed_ips: ['10.0.0.0/8', '2001:db8::/32', '127.0.0.1'],
      },
      errors: {},
    });
    const at = lifecycleBody({ ...l, expiry: 'at', expiresAt: '2031-02-01T08:30' }, NOW);
    assert.equal(at.body.expires_at, '2031-02-01T08:30:00.000Z', 'read as UTC');
    assert.equal(lifecycleBody(lifecycleOf(), NOW).body.expires_at, null);
  });

  it('says what is wrong, one sentence per bad address', () => {
    const { errors } = lifecycleBody(
      { ...lifecycleOf(), expiry: 'in', expiresIn: 'soon', ips: '10.0.0.300 ok? 192.168.0.0/16' },
      NOW,
    );
    assert.deepEqual(errors.expiry, ['“soon” is not a duration: give one such as 90m, 24h, 30d or 1w.']);
    assert.equal(errors.allowed_ips?.length, 2);
    assert.match(errors.allowed_ips?.[0] ?? '', /^“10\.0\.0\.300” is not an IP address or CIDR block/);
    assert.match(errors.allowed_ips?.[1] ?? '', /^“ok\?” is not/);
    const past = lifecycleBody({ ...lifecycleOf(), expiry: 'at', expiresAt: '2031-01-01T00:00' }, NOW);
    assert.match(past.errors.expiry?.[0] ?? '', /has passed/);
  });

  it("an edit leaves the expiry out when it is unchanged (an expired key's models can still change)", () => {
    const key = {
      expires_at: Math.floor(Date.UTC(2031, 0, 1) / 1000),
      allowed_models: [],
      allowed_ips: [],
    } as unknown as Parameters<typeof lifecycleOf>[0];
    const before = lifecycleOf(key);
    const { body, errors } = lifecycleBody({ ...before, models: ['chat-B'] }, NOW, before);
    assert.deepEqual(errors, {});
    assert.deepEqual(body, { allowed_models: ['chat-B'], allowed_ips: [] });
  });

  it('names the field of a server failure by its param', () => {
    assert.equal(fieldOfParam('allowed_ips[2]'), 'allowed_ips');
    assert.equal(fieldOfParam('expires_in'), 'expiry');
    assert.equal(fieldOfParam(null), '_form');
  });
});
