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
          {
            apiKey: '[redacted]',
            key: '[redacted]',
            token: '[redacted]',
            passwordHash: '[redacted]',
            name: 'n',
          },
        ],
        at: '2026-01-02T03:04:05.000Z',
        big: '12',
        cleared: null,
      },
    );
  });

  it('keeps limit values: token counts and the key scope of limits are not secrets', () => {
    const limits = {
      key: { requests_per_minute: 120, tokens_per_minute: 50_000 },
      member: { tokens_per_day: 1_000_000 },
      max_tokens: 10,
      token_count: 3,
    };
    assert.deepEqual(redactSecrets({ limits, prefix: 'sk-inf-abc123' }), { limits, prefix: 'sk-inf-abc123' });
    assert.deepEqual(
      redactSecrets({
        client_secret: 's',
        access_token: 'a',
        idToken: 'i',
        api_key: 'k',
        hash: 'h',
        pass: 'p',
      }),
      {
        client_secret: '[redacted]',
        access_token: '[redacted]',
        idToken: '[redacted]',
        api_key: '[redacted]',
        hash: '[redacted]',
        pass: '[redacted]',
      },
    );
  });
});
