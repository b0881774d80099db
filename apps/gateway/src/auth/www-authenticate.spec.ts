import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bearerChallenge, unauthorized } from './www-authenticate.js';

describe('WWW-Authenticate Bearer challenge (RFC 6750)', () => {
  it('no error code without credentials; invalid_token / invalid_request otherwise; quoted safely', () => {
    assert.equal(
      bearerChallenge('An API key is required.'),
      'Bearer realm="infer-platform", error_description="An API key is required."',
    );
    assert.equal(
      bearerChallenge('unknown', 'invalid_token'),
      'Bearer realm="infer-platform", error="invalid_token", error_description="unknown"',
    );
    assert.equal(
      bearerChallenge('a "b" \\ c\n'),
      'Bearer realm="infer-platform", error_description="a \\"b\\" \\\\ c"',
    );
  });

  it('the 401 keeps the spec body (invalid_api_key) and carries the header', () => {
    const e = unauthorized(
      'Incorrect API key provided.',
      'The API key is unknown or revoked.',
      'invalid_token',
    );
    assert.equal(e.status, 401);
    assert.equal(e.code, 'invalid_api_key');
    assert.match(
      e.headers['www-authenticate'] ?? '',
      /^Bearer realm="infer-platform", error="invalid_token"/,
    );
  });
});
