import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkHttps, isLoopback } from './https-policy.js';

describe('HTTPS policy', () => {
  it('accepts TLS (direct or vouched for by a trusted proxy)', () => {
    assert.equal(
      checkHttps({ protocol: 'https', remoteAddress: '10.1.2.3', allowInsecureLoopback: false }),
      null,
    );
  });
  it('refuses plain HTTP with a 403 https_required Error body', () => {
    const e = checkHttps({ protocol: 'http', remoteAddress: '127.0.0.1', allowInsecureLoopback: false });
    assert.equal(e?.status, 403);
    assert.equal(e?.toBody().error.code, 'https_required');
  });
  it('in development mode lets plain HTTP through from loopback only', () => {
    for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '127.3.4.5']) {
      assert.equal(checkHttps({ protocol: 'http', remoteAddress: a, allowInsecureLoopback: true }), null, a);
    }
    for (const a of ['10.0.0.1', '192.168.1.2', '::ffff:10.0.0.1', undefined]) {
      assert.notEqual(
        checkHttps({ protocol: 'http', remoteAddress: a, allowInsecureLoopback: true }),
        null,
        String(a),
      );
    }
  });
  it('recognises loopback addresses', () => {
    assert.ok(isLoopback('127.0.0.1'));
    assert.ok(!isLoopback('128.0.0.1'));
    assert.ok(!isLoopback('1127.0.0.1'));
  });
});
