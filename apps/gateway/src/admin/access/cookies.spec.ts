import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clearedSessionCookie,
  readSessionCookie,
  SESSION_COOKIE,
  sameToken,
  sessionCookie,
} from './cookies.js';

const TOKEN = 'A'.repeat(43);

describe('console session cookie', () => {
  it('is HttpOnly, SameSite=Strict, Path=/ and Secure only over HTTPS', () => {
    assert.equal(
      sessionCookie(TOKEN, false),
      `${SESSION_COOKIE}=${TOKEN}; Path=/; HttpOnly; SameSite=Strict`,
    );
    assert.match(sessionCookie(TOKEN, true), /; Secure/);
    assert.match(
      clearedSessionCookie(true),
      /=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Strict/,
    );
  });

  it('reads the token among other cookies and ignores malformed values', () => {
    assert.equal(readSessionCookie(`a=1; ${SESSION_COOKIE}=${TOKEN}; b=2`), TOKEN);
    assert.equal(readSessionCookie(undefined), undefined);
    assert.equal(readSessionCookie('a=1'), undefined);
    assert.equal(readSessionCookie(`${SESSION_COOKIE}=short`), undefined);
    assert.equal(readSessionCookie(`${SESSION_COOKIE}=${'A'.repeat(40)}%3B`), undefined);
  });

  it('compares tokens exactly', () => {
    assert.equal(sameToken('abc', 'abc'), true);
    assert.equal(sameToken('abd', 'abc'), false);
    assert.equal(sameToken('ab', 'abc'), false);
    assert.equal(sameToken(undefined, 'abc'), false);
  });
});
