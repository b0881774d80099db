import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ago, compactNumber, expiryText, toCsv, utc } from './format.js';

describe('console formatting', () => {
  it('shows times in UTC from seconds or milliseconds', () => {
    assert.equal(utc(1_795_490_548), '2026-11-24 03:22 UTC');
    assert.equal(utc(1_795_490_548_000), '2026-11-24 03:22 UTC');
    assert.equal(utc(null), '-');
  });

  it('says when a key expires, or how long ago it did', () => {
    const now = 1_800_000_000_000;
    assert.equal(expiryText(null, now), 'never');
    assert.equal(expiryText(now / 1000 + 3 * 86_400, now), 'expires in 3 d');
    assert.equal(expiryText(now / 1000 + 5400, now), 'expires in 2 h');
    assert.equal(expiryText(now / 1000 - 120, now), 'expired 2 min ago');
  });

  it('says how long ago', () => {
    const now = 1_800_000_000_000;
    assert.equal(ago(now - 3_000, now), '3 s ago');
    assert.equal(ago(now / 1000 - 300, now), '5 min ago');
    assert.equal(ago(now - 2 * 3_600_000, now), '2 h ago');
    assert.equal(ago(null, now), 'never');
  });

  it('abbreviates large numbers', () => {
    assert.deepEqual([999, 1234, 1_500_000, 2e9].map(compactNumber), ['999', '1.23k', '1.5M', '2B']);
  });

  it('writes CSV that spreadsheets read safely', () => {
    assert.equal(
      toCsv(
        ['name', 'n'],
        [
          ['a,b', 1],
          ['say "hi"', 2],
          ['=HYPERLINK("x")', null],
        ],
      ),
      'name,n\r\n"a,b",1\r\n"say ""hi""",2\r\n"\'=HYPERLINK(""x"")",\r\n',
    );
  });
});
