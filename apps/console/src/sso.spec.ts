import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OidcErrorCodes } from '@infer/contracts';
import { SSO_MESSAGES, ssoMessage } from './sso.js';

describe('sign-in page: single sign-on errors', () => {
  it('has a message for every code the gateway sends', () => {
    for (const code of OidcErrorCodes) assert.ok(SSO_MESSAGES[code], code);
    assert.equal(ssoMessage('unknown_operator'), SSO_MESSAGES.unknown_operator);
  });

  it('never echoes text from the URL', () => {
    assert.equal(ssoMessage('<script>alert(1)</script>'), 'Single sign-on did not complete. Try again.');
    assert.equal(ssoMessage('toString'), 'Single sign-on did not complete. Try again.');
    assert.equal(ssoMessage(null), null);
  });
});
