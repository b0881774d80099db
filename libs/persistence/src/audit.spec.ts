import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactSecrets } from './audit.js';

describe('audit log values', () => {
  it('masks secrets at any depth and keeps the rest', () => {
    const at = new Date('2026-01-02T03:04:05Z');
    assert.deepEqual(
      redactSecrets({
        email: 'a@b.c',
        password: 'hunter2',
        nested: [{ apiKey: 'x', key: 'sk-inf-secret', token: 't', passwordHash: 'h', name: 'n' }],
        at,
        big: 12n,
        cleared: null,
      }),
      {
        email: 'a@b.c',
        password: '[redacted]',
        nested: [
          { apiKey: 'x', key: '[redacted]', token: '[redacted]', passwordHash: '[redacted]', name: 'n' },
        ],
        at: '2026-01-02T03:04:05.000Z',
        big: '12',
        cleared: null,
      },
    );
  });
});
