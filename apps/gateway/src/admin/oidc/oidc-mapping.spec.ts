import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Operator } from '@infer/persistence';
import { decideOidcOperator, identityEmail, identityKey, type OidcIdentity } from './oidc-mapping.js';

const op = (over: Partial<Operator> = {}): Operator => ({
  id: 'op-1',
  email: 'ada@example.com',
  role: 'admin',
  passwordHash: null,
  disabledAt: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  lastLoginAt: null,
  oidcSubject: null,
  ...over,
});
const ada: OidcIdentity = {
  issuer: 'https://idp.example.com',
  subject: 'sub-1',
  email: 'Ada@Example.com ',
  emailVerified: true,
};
const open = { allowedDomains: [], autoProvision: false };

describe('single sign-on: identity to operator', () => {
  it('signs in the operator with the verified email, linking the identity the first time', () => {
    const first = decideOidcOperator(ada, op(), open);
    assert.deepEqual(first, { kind: 'operator', operator: op(), link: true, email: 'ada@example.com' });
    const linked = op({ oidcSubject: identityKey(ada) });
    assert.deepEqual(decideOidcOperator(ada, linked, open), {
      kind: 'operator',
      operator: linked,
      link: false,
      email: 'ada@example.com',
    });
  });

  it('refuses a missing, malformed or unverified email', () => {
    for (const email of [undefined, 42, '', 'not an email'])
      assert.deepEqual(decideOidcOperator({ ...ada, email }, op(), open), {
        kind: 'refused',
        code: 'email_missing',
      });
    for (const emailVerified of [false, undefined, 'true'])
      assert.deepEqual(decideOidcOperator({ ...ada, emailVerified }, op(), open), {
        kind: 'refused',
        code: 'email_unverified',
      });
  });

  it('refuses other domains when domains are configured', () => {
    const policy = { allowedDomains: ['corp.example'], autoProvision: false };
    assert.deepEqual(decideOidcOperator(ada, op(), policy), { kind: 'refused', code: 'domain_not_allowed' });
    const corp = { ...ada, email: 'ada@corp.example' };
    assert.equal(decideOidcOperator(corp, op({ email: 'ada@corp.example' }), policy).kind, 'operator');
    // A domain that merely ends like an allowed one is another domain.
    assert.equal(decideOidcOperator({ ...ada, email: 'x@evilcorp.example' }, null, policy).kind, 'refused');
  });

  it('refuses unknown emails, or provisions them when configured', () => {
    assert.deepEqual(decideOidcOperator(ada, null, open), { kind: 'refused', code: 'unknown_operator' });
    assert.deepEqual(
      decideOidcOperator(ada, null, { allowedDomains: ['example.com'], autoProvision: true }),
      {
        kind: 'provision',
        email: 'ada@example.com',
      },
    );
  });

  it('refuses disabled operators and a second identity claiming a linked operator', () => {
    assert.deepEqual(decideOidcOperator(ada, op({ disabledAt: new Date() }), open), {
      kind: 'refused',
      code: 'operator_disabled',
    });
    const linked = op({ oidcSubject: identityKey({ issuer: ada.issuer, subject: 'someone-else' }) });
    assert.deepEqual(decideOidcOperator(ada, linked, open), { kind: 'refused', code: 'identity_mismatch' });
  });

  it('normalises emails like stored operators', () => {
    assert.equal(identityEmail(ada), 'ada@example.com');
    assert.equal(identityEmail({ ...ada, email: 'a b@c.d' }), null);
  });
});
