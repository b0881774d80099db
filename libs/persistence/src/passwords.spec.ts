import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';

describe('operator passwords (scrypt)', () => {
  it('verifies the right password and refuses others', async () => {
    const h = await hashPassword('correct horse battery');
    assert.match(h, /^scrypt\$15\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    assert.equal(await verifyPassword('correct horse battery', h), true);
    assert.equal(await verifyPassword('correct horse batterY', h), false);
    assert.equal(await verifyPassword('', h), false);
  });

  it('salts every hash', async () => {
    const [a, b] = await Promise.all([hashPassword('same password!'), hashPassword('same password!')]);
    assert.notEqual(a, b);
    assert.equal(await verifyPassword('same password!', b), true);
  });

  it('treats NFC and NFD spellings as the same password', async () => {
    const h = await hashPassword('caf\u00e9 caf\u00e9 caf\u00e9');
    assert.equal(await verifyPassword('cafe\u0301 cafe\u0301 cafe\u0301', h), true);
  });

  it('refuses malformed or tampered hashes without throwing', async () => {
    const h = await hashPassword('correct horse battery');
    for (const bad of [
      '',
      'plain',
      h.replace('scrypt', 'bcrypt'),
      h.replace('$15$', '$40$'),
      `${h}x$`,
      h.slice(0, -4),
    ])
      assert.equal(await verifyPassword('correct horse battery', bad), false, bad);
  });

  it('needs 12 to 1024 characters', () => {
    assert.match(passwordProblem('short') ?? '', /at least 12/);
    assert.equal(passwordProblem('twelve chars'), null);
    assert.match(passwordProblem('x'.repeat(1025)) ?? '', /at most 1024/);
  });
});
