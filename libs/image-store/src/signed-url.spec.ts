import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkImageSignature, signedImageUrl, signImage } from './signed-url.js';

const secret = 'a-test-secret-of-sufficient-length-123';

describe('signed image URLs', () => {
  const id = 'img_abcdefghijklmnop';
  const expires = 1_800_000_000;

  it('builds <base>/v1/images/files/<id>.<ext>?expires&sig', () => {
    const url = new URL(signedImageUrl('https://api.example.com/', id, 'png', expires, secret));
    assert.equal(url.origin, 'https://api.example.com');
    assert.equal(url.pathname, `/v1/images/files/${id}.png`);
    assert.equal(url.searchParams.get('expires'), String(expires));
    assert.equal(url.searchParams.get('sig'), signImage(id, expires, secret));
  });

  it('is valid before expiry and expired at and after it', () => {
    const sig = signImage(id, expires, secret);
    assert.equal(checkImageSignature(id, String(expires), sig, secret, expires * 1000 - 1), 'valid');
    assert.equal(checkImageSignature(id, String(expires), sig, secret, expires * 1000), 'expired');
    assert.equal(
      checkImageSignature(id, String(expires), sig, secret, expires * 1000 + 3_600_000),
      'expired',
    );
  });

  it('refuses a changed id, a changed expiry, another secret and malformed parts', () => {
    const sig = signImage(id, expires, secret);
    const now = expires * 1000 - 10_000;
    assert.equal(checkImageSignature('img_zzzzzzzzzzzzzzzz', String(expires), sig, secret, now), 'invalid');
    assert.equal(checkImageSignature(id, String(expires + 3600), sig, secret, now), 'invalid');
    assert.equal(checkImageSignature(id, String(expires), sig, `${secret}x`, now), 'invalid');
    assert.equal(checkImageSignature(id, undefined, sig, secret, now), 'invalid');
    assert.equal(checkImageSignature(id, String(expires), undefined, secret, now), 'invalid');
    assert.equal(checkImageSignature(id, '1e9', sig, secret, now), 'invalid');
    assert.equal(checkImageSignature(id, String(expires), `${sig.slice(0, -1)}!`, secret, now), 'invalid');
    // A forged URL past its expiry is still 'invalid', not 'expired': it learns nothing.
    assert.equal(checkImageSignature(id, '1000', sig, secret, now), 'invalid');
  });
});
