import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HSTS, securityHeaders } from './security-headers.js';

describe('security headers', () => {
  it('nosniff always; HSTS only over HTTPS', () => {
    assert.deepEqual(securityHeaders('http'), { 'x-content-type-options': 'nosniff' });
    assert.deepEqual(securityHeaders('https'), {
      'x-content-type-options': 'nosniff',
      'strict-transport-security': HSTS,
    });
    assert.match(HSTS, /^max-age=31536000; includeSubDomains$/);
  });
});
