/**
 * A batch runner killed mid-batch (a real child process, SIGKILL): another runner takes the job over
 * once its BullMQ lock runs out and resumes from the checkpoint. Every input line gets exactly one
 * output line, and exactly one usage event per line reaches the stream and the ledger (written by the
 * real ledger writer), marked batch, priced at the catalog's factor by the usage report.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { BatchOutputLineSchema } from '@infer/contracts';
import { usageReport } from '@infer/persistence';
import { connectNats } from '@infer/rpc';
import { jetstreamManager } from '@nats-io/jetstream';
import { toFile } from 'openai';
import { type RunningBatchRunner, startBatchRunner } from '../../apps/gateway/src/batch/runner/app.js';
import { type LedgerWriter, startLedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { waitFor } from '../support/wait-for.js';
import { batchCatalog, batchDirs, chatLine, jsonl, runnerEnv } from './batch-support.js';
import { type Stack, startStack } from './harness.js';

describe('batch runner killed mid-batch', () => {
  let stack: Stack;
  let child: ChildProcess | null = null;
  let runner: RunningBatchRunner | null = null;
  let ledger: LedgerWriter | null = null;
  const dirs = batchDirs();

  before(async () => {
    stack = await startStack({
      catalogFile: batchCatalog(dirs.dir, 100),
      env: {
        BULLMQ_PREFIX: `tbatchk${randomBytes(4).toString('hex')}`,
        FILE_STORE: 'fs',
        FILE_STORE_DIR: dirs.files,
      },
    });
  });

  after(async () => {
    child?.kill('SIGKILL');
    await runner?.stop();
    await ledger?.stop();
    await stack?.close();
    rmSync(dirs.dir, { recursive: true, force: true });
  });

  /** The batch runner role in a child process; resolves when it says it is ready. */
  function spawnRunner(): Promise<ChildProcess> {
    const c = spawn(
      process.execPath,
      ['--conditions=source', '--import', './tools/ts-register.js', 'apps/gateway/src/batch-runner.ts'],
      {
        env: runnerEnv(stack, { LOG_LEVEL: 'info', BATCH_MODEL_CONCURRENCY: '4', BATCH_LOCK_MS: '1500' }),
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    return new Promise((resolve, reject) => {
      let out = '';
      // A deadline, not a wait: the child compiles TypeScript first, slow on a busy machine.
      const timer = setTimeout(() => reject(new Error(`runner not ready: ${out}`)), 120_000);
      c.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('batch runner ready')) {
          clearTimeout(timer);
          resolve(c);
        }
      });
      c.once('exit', (code) => reject(new Error(`runner exited (${code}): ${out}`)));
    });
  }

  it('resumes from the checkpoint: every line once, every line billed once', async () => {
    child = await spawnRunner();
    const client = stack.client('community');
    const n = 80;
    const file = await client.files.create({
      file: await toFile(
        Buffer.from(jsonl(Array.from({ length: n }, (_, i) => chatLine(`k${i}`, 'chat-slow')))),
        'k.jsonl',
      ),
      purpose: 'batch',
    });
    const b = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    // Kill the runner once some lines are done and others are in flight.
    await waitFor(
      'lines done before the kill',
      async () => (await stack.prisma.batchLine.count({ where: { batchId: b.id } })) >= 12,
      {
        timeoutMs: 30_000,
        everyMs: 20,
      },
    );
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    child = null;
    const before = await stack.prisma.batchLine.count({ where: { batchId: b.id } });
    assert.ok(before < n, 'the runner died mid-batch');

    // Another runner takes the job over once the dead one's lock runs out.
    runner = await startBatchRunner({
      env: runnerEnv(stack, { BATCH_MODEL_CONCURRENCY: '4', BATCH_LOCK_MS: '1500' }),
    });
    const done = await waitFor(
      'the batch to complete on the second runner',
      async () => {
        const x = await client.batches.retrieve(b.id);
        return x.status === 'completed' ? x : null;
      },
      { timeoutMs: 60_000, everyMs: 100 },
    );
    assert.deepEqual(done.request_counts, { total: n, completed: n, failed: 0 });
    assert.equal(done.error_file_id, null);
    const out = (await (await client.files.content(done.output_file_id!)).text())
      .split('\n')
      .filter(Boolean)
      .map((l) => BatchOutputLineSchema.parse(JSON.parse(l)));
    assert.equal(out.length, n);
    assert.deepEqual(
      out.map((l) => l.custom_id),
      Array.from({ length: n }, (_, i) => `k${i}`),
    );

    // Usage: exactly one event per line in the stream (a re-run line re-publishes the same id) ...
    const c = stack.gateway.config;
    const nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'batch-recovery-it');
    try {
      const info = await (await jetstreamManager(nc)).streams.info(c.USAGE_STREAM);
      assert.equal(info.state.messages, n);
    } finally {
      await nc.close();
    }
    // ... and exactly one ledger row per line, marked batch, billed at the catalog's factor (0.5).
    ledger = await startLedgerWriter({
      env: {
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        LOG_LEVEL: 'silent',
        LEDGER_STREAM: c.USAGE_STREAM,
        LEDGER_SUBJECTS: `${c.USAGE_SUBJECT_ROOT}.>`,
        LEDGER_CONSUMER: 'ledger-writer',
      },
    });
    const rows = await waitFor('the ledger rows', async () => {
      const r = await stack.prisma.usageEvent.findMany({ where: { requestId: { startsWith: `${b.id}:` } } });
      return r.length >= n ? r : null;
    });
    assert.equal(rows.length, n);
    assert.equal(new Set(rows.map((r) => r.requestId)).size, n);
    assert.ok(rows.every((r) => r.batch));
    const [total] = await usageReport(stack.prisma, {
      from: new Date(Date.now() - 3_600_000),
      to: new Date(Date.now() + 60_000),
      groupBy: [],
    });
    assert.equal(total?.batchRequests, n);
    const tokens = rows.reduce((s, r) => s + r.totalTokens, 0);
    assert.equal(total?.totalTokens, tokens);
    assert.ok(Math.abs((total?.billableTokens ?? 0) - tokens * 0.5) <= 1);
  });
});
