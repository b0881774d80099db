import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { DEV_SEAL_KEYS, parseSealKeys, ReasoningSeal } from './reasoning-seal.js';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

describe('ReasoningSeal', () => {
  it('opens what it sealed, for the same member only', () => {
    const s = new ReasoningSeal(parseSealKeys(key('k1')));
    const blob = s.seal('I think, therefore.', 'member-a');
    assert.match(blob, /^k1\./);
    assert.ok(!blob.includes('think'));
    assert.equal(s.open(blob, 'member-a', 'input[0].encrypted_content'), 'I think, therefore.');
    assert.throws(
      () => s.open(blob, 'member-b', 'input[2].encrypted_content'),
      (e: ApiError) => e.status === 400 && e.param === 'input[2].encrypted_content',
    );
  });

  it('400s on a tampered, truncated, foreign or garbage blob, naming the item', () => {
    const s = new ReasoningSeal(parseSealKeys(key('k1')));
    const other = new ReasoningSeal(parseSealKeys(key('k1')));
    const blob = s.seal('secret reasoning', 'm');
    const body = Buffer.from(blob.slice(3), 'base64url');
    body[14] = (body[14] ?? 0) ^ 1;
    const bad = [
      `k1.${body.toString('base64url')}`,
      blob.slice(0, 20),
      other.seal('x', 'm'),
      'k9.AAAA',
      '',
      '.',
      'k1.',
      'no-dot-at-all',
      'k1.!!!!',
    ];
    for (const b of bad) {
      assert.throws(
        () => s.open(b, 'm', 'input[3].encrypted_content'),
        (e: unknown) => e instanceof ApiError && e.status === 400 && e.param === 'input[3].encrypted_content',
        b,
      );
    }
  });

  it('rotates: a new first key seals, the old one still opens', () => {
    const old = key('old');
    const before = new ReasoningSeal(parseSealKeys(old));
    const blob = before.seal('kept', 'm');
    const after = new ReasoningSeal(parseSealKeys(`${key('new')},${old}`));
    assert.equal(after.open(blob, 'm', 'p'), 'kept');
    assert.match(after.seal('x', 'm'), /^new\./);
  });

  it('refuses malformed key lists with a message naming the entry', () => {
    assert.throws(() => parseSealKeys('nokey'), /<id>:<base64 key>/);
    assert.throws(() => parseSealKeys('k:AAAA'), /32 bytes/);
    assert.throws(() => parseSealKeys(`${key('a')},${key('a')}`), /twice/);
    assert.equal(parseSealKeys(DEV_SEAL_KEYS).length, 1);
  });
});
