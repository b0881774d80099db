/**
 * Batch lines and the key's limits: they skip the per-minute and concurrency limits (a key allowed one
 * request a minute and one at a time still runs a whole batch, and its interactive budget is left
 * untouched) but count against the model's monthly token allowance, checked per line: once it is
 * spent, the remaining lines get 402 monthly_cap_reached in the error file.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { BatchOutputLineSchema } from '@infer/contracts';
import { toFile } from 'openai';
import { type RunningBatchRunner, startBatchRunner } from '../../apps/gateway/src/batch/runner/app.js';
import { waitFor } from '../support/wait-for.js';
import { batchCatalog, batchDirs, chatLine, jsonl, runnerEnv } from './batch-support.js';
import { type Stack, startStack } from './harness.js';
import { newKey } from './limits-support.js';

describe('batch lines and limits', () => {
  let stack: Stack;
  let runner: RunningBatchRunner;
  const dirs = batchDirs();

  before(async () => {
    const env = {
      BULLMQ_PREFIX: `tbatchl${randomBytes(4).toString('hex')}`,
      FILE_STORE: 'fs',
      FILE_STORE_DIR: dirs.files,
      LIMITS_ENABLED: '1',
      LIMITS_REDIS_PREFIX: `limb${randomBytes(4).toString('hex')}:`,
    };
    stack = await startStack({ catalogFile: batchCatalog(dirs.dir), env });
    runner = await startBatchRunner({ env: runnerEnv(stack, { BATCH_MODEL_CONCURRENCY: '2' }) });
  });

  after(async () => {
    await runner?.stop();
    await stack?.close();
    rmSync(dirs.dir, { recursive: true, force: true });
  });

  it('skip the per-minute and concurrency limits, and stop at the monthly allowance line by line', async () => {
    const k = await newKey(stack, 'inference', {
      key: { requests_per_minute: 1, concurrent: 1 },
      models: { 'chat-C': { allowance_tokens: 120 } },
    });
    const n = 8;
    const input = Array.from({ length: n }, (_, i) => ({
      ...chatLine(`l${i}`, 'chat-C'),
      body: { model: 'chat-C', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 },
    }));
    const file = await k.client.files.create({
      file: await toFile(Buffer.from(jsonl(input)), 'l.jsonl'),
      purpose: 'batch',
    });
    const b = await k.client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await waitFor(
      'the batch to complete',
      async () => {
        const x = await k.client.batches.retrieve(b.id);
        return x.status === 'completed' ? x : null;
      },
      { timeoutMs: 30_000, everyMs: 100 },
    );
    const read = async (id: string | null | undefined) =>
      id
        ? (await (await k.client.files.content(id)).text())
            .split('\n')
            .filter(Boolean)
            .map((l) => BatchOutputLineSchema.parse(JSON.parse(l)))
        : [];
    const ok = await read(done.output_file_id);
    const refused = await read(done.error_file_id);
    assert.equal(ok.length + refused.length, n);
    // More than one line ran although the key allows one request a minute, one at a time.
    assert.ok(ok.length >= 2, `lines that ran: ${ok.length}`);
    const spent = ok.reduce(
      (s, l) => s + (l.response!.body as { usage: { total_tokens: number } }).usage.total_tokens,
      0,
    );
    assert.ok(spent >= 100, `tokens spent: ${spent}`);
    // The allowance stopped the rest, each line checked on its own.
    assert.ok(refused.length >= 1, 'some lines were refused');
    for (const l of refused) {
      assert.equal(l.response?.status_code, 402);
      assert.equal((l.response!.body as { error: { code: string } }).error.code, 'monthly_cap_reached');
    }
    // The key's per-minute budget is untouched by the batch: its first interactive request passes
    // (another model: chat-C's allowance is spent), the second within the minute is refused.
    await k.client.chat.completions.create({
      model: 'chat-D',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
    });
    await assert.rejects(
      k.client.chat.completions.create({
        model: 'chat-D',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 1,
      }),
      (e: { status?: number }) => e.status === 429,
    );
  });
});
