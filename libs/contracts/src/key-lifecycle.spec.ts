import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalCidr, cidrMatcher, parseCidr, parseDuration } from './key-lifecycle.js';

describe('parseDuration', () => {
  it('reads single and combined units', () => {
    assert.equal(parseDuration('0'), 0);
    assert.equal(parseDuration('90s'), 90_000);
    assert.equal(parseDuration('15m'), 900_000);
    assert.equal(parseDuration('24h'), 86_400_000);
    assert.equal(parseDuration('30d'), 30 * 86_400_000);
    assert.equal(parseDuration('2w'), 14 * 86_400_000);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration(' 1D '), 86_400_000);
  });
  it('refuses what is not a duration', () => {
    for (const bad of ['', 'h', '1', '-1h', '1.5h', '1y', '1 h', 'abc', '1h-', '99999999999d']) {
      assert.equal(parseDuration(bad), null, bad);
    }
  });
});

describe('CIDR allow-lists', () => {
  it('parses blocks and single addresses, canonically', () => {
    assert.equal(canonicalCidr('10.1.2.3/8'), '10.1.2.3/8');
    assert.equal(canonicalCidr('203.0.113.7'), '203.0.113.7/32');
    assert.equal(canonicalCidr('2001:DB8::/32'), '2001:db8::/32');
    assert.equal(canonicalCidr('::1'), '::1/128');
    assert.equal(canonicalCidr('::ffff:10.0.0.0/104'), '10.0.0.0/8');
    for (const bad of ['', '10.0.0.0/33', '2001:db8::/129', 'example.com', '10.0.0', '1.2.3.4/x']) {
      assert.equal(parseCidr(bad), null, bad);
    }
  });
  it('matches IPv4 and IPv6 clients, IPv4-mapped ones as IPv4', () => {
    const allowed = cidrMatcher(['10.0.0.0/8', '203.0.113.7', '2001:db8::/32']);
    assert.equal(allowed('10.200.3.4'), true);
    assert.equal(allowed('11.0.0.1'), false);
    assert.equal(allowed('203.0.113.7'), true);
    assert.equal(allowed('203.0.113.8'), false);
    assert.equal(allowed('2001:db8:1::5'), true);
    assert.equal(allowed('2001:db9::5'), false);
    assert.equal(allowed('::ffff:10.1.1.1'), true);
    assert.equal(allowed('::ffff:11.1.1.1'), false);
  });
  it('never matches a missing or malformed address', () => {
    const allowed = cidrMatcher(['0.0.0.0/0', '::/0']);
    assert.equal(allowed('192.0.2.1'), true);
    assert.equal(allowed('::1'), true);
    assert.equal(allowed(undefined), false);
    assert.equal(allowed('not-an-ip'), false);
  });
});
