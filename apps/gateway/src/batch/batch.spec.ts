import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FsFileStore } from '@infer/image-store';
import { LineCounter } from './files.controller.js';
import { batchLimitSubject } from './runner/batch-runner.js';

describe('LineCounter', () => {
  it('counts non-empty lines across chunk boundaries, with or without a final newline', () => {
    const c = new LineCounter();
    for (const part of ['{"a":1}\n{"b"', ':2}\r\n\n  \n{"c":3}']) c.push(Buffer.from(part));
    assert.equal(c.total, 3);
    assert.equal(c.bytes, Buffer.byteLength('{"a":1}\n{"b":2}\r\n\n  \n{"c":3}'));
    c.push(Buffer.from('\n'));
    assert.equal(c.total, 3);
    assert.equal(new LineCounter().total, 0);
  });
});

describe('batchLimitSubject', () => {
  it('lifts the per-minute and concurrency limits of the key and the model, and keeps the rest', () => {
    const s = batchLimitSubject(
      { keyId: 'k', memberId: 'm' },
      {
        tier: 'premium',
        billingAnchor: '2026-01-05T00:00:00.000Z',
        overrides: {
          key: { requests_per_minute: 5 },
          models: { 'chat-G': { allowance_tokens: 1000, concurrent: 1 } },
        },
      },
      'chat-G',
    );
    assert.equal(s.tier, 'premium');
    assert.equal(+s.billingAnchor, Date.UTC(2026, 0, 5));
    assert.deepEqual(s.overrides, {
      key: { requests_per_minute: null, concurrent: null },
      models: {
        'chat-G': {
          allowance_tokens: 1000,
          requests_per_minute: null,
          tokens_per_minute: null,
          concurrent: null,
        },
      },
    });
  });
});

describe('FsFileStore', () => {
  it('streams a file in and out, replaces it, deletes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'files-'));
    try {
      const store = new FsFileStore(join(dir, 'files'));
      async function* chunks(n: number) {
        for (let i = 0; i < n; i++) yield Buffer.from(`line ${i}\n`);
      }
      assert.equal(
        await store.put('file-abc', chunks(1000)),
        Buffer.byteLength(Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join('')),
      );
      const read = async () => {
        const s = await store.get('file-abc');
        if (!s) return null;
        const parts: Buffer[] = [];
        for await (const c of s) parts.push(c as Buffer);
        return Buffer.concat(parts).toString();
      };
      assert.match((await read()) ?? '', /^line 0\nline 1\n.*line 999\n$/s);
      await store.put('file-abc', chunks(1));
      assert.equal(await read(), 'line 0\n');
      // A failed upload leaves the previous bytes and no temporary file behind.
      await assert.rejects(
        store.put(
          'file-abc',
          (async function* () {
            yield Buffer.from('partial');
            throw new Error('client went away');
          })(),
        ),
      );
      assert.equal(await read(), 'line 0\n');
      await store.delete('file-abc');
      assert.equal(await store.get('file-abc'), null);
      await assert.rejects(store.get('../etc/passwd'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
