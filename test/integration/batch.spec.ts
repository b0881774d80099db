/**
 * The Files and Batch APIs through the official `openai` SDK: upload, create, poll, output and error
 * files, list, cancel, expiry, validation failures (no tokens charged) and member isolation, with the
 * gateway, the chat and embedding services and a batch runner (in-process) on the real PostgreSQL,
 * Redis and NATS.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { BatchOutputLineSchema, type UsageEvent } from '@infer/contracts';
import { connectNats, type NatsConnection } from '@infer/rpc';
import OpenAI, { toFile } from 'openai';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { type RunningBatchRunner, startBatchRunner } from '../../apps/gateway/src/batch/runner/app.js';
import { waitFor } from '../support/wait-for.js';
import { batchCatalog, batchDirs, chatLine, jsonl, runnerEnv } from './batch-support.js';
import { apiError, type Stack, startStack } from './harness.js';
import { ADMIN_TOKEN } from './limits-support.js';

const FINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

describe('Files and Batch APIs', () => {
  let stack: Stack;
  let runner: RunningBatchRunner;
  let nc: NatsConnection;
  const usage: UsageEvent[] = [];
  const dirs = batchDirs();
  let community: OpenAI;
  let inference: OpenAI;

  before(async () => {
    stack = await startStack({
      catalogFile: batchCatalog(dirs.dir),
      env: {
        BULLMQ_PREFIX: `tbatch${randomBytes(4).toString('hex')}`,
        FILE_STORE: 'fs',
        FILE_STORE_DIR: dirs.files,
        ADMIN_TOKEN,
      },
      services: [(env) => startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX })],
    });
    runner = await startBatchRunner({
      env: runnerEnv(stack, { BATCH_MODEL_CONCURRENCY: '2', OPS_PORT: '0', OPS_HOST: '127.0.0.1' }),
    });
    nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'batch-it');
    const sub = nc.subscribe(`${stack.usageRoot}.>`);
    void (async () => {
      for await (const m of sub) usage.push(m.json<UsageEvent>());
    })();
    community = stack.client('community');
    inference = stack.client('inference');
  });

  after(async () => {
    await nc?.close();
    await runner?.stop();
    await stack?.close();
    rmSync(dirs.dir, { recursive: true, force: true });
  });

  const upload = async (client: OpenAI, text: string, name = 'input.jsonl') =>
    client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });

  const settle = (client: OpenAI, id: string, timeoutMs = 30_000) =>
    waitFor(
      `batch ${id} to finish`,
      async () => {
        const b = await client.batches.retrieve(id);
        return FINAL.has(b.status) ? b : null;
      },
      { timeoutMs, everyMs: 100 },
    );

  const lines = async (client: OpenAI, fileId: string | null | undefined) => {
    if (!fileId) return [];
    const text = await (await client.files.content(fileId)).text();
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => BatchOutputLineSchema.parse(JSON.parse(l)));
  };

  it('runs a chat batch: one output line per input line, usage marked batch', async () => {
    const input = [chatLine('a'), chatLine('b'), chatLine('c', 'chat-F'), chatLine('d')];
    const file = await upload(community, jsonl(input));
    assert.equal(file.object, 'file');
    assert.equal(file.purpose, 'batch');
    assert.equal(file.bytes, Buffer.byteLength(jsonl(input)));
    assert.ok(file.expires_at && file.expires_at > file.created_at);
    const created = await community.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { job: 'nightly' },
    });
    assert.equal(created.object, 'batch');
    assert.equal(created.status, 'validating');
    assert.deepEqual(created.metadata, { job: 'nightly' });
    assert.equal(created.expires_at! - created.created_at, 24 * 3600);
    const done = await settle(community, created.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: 4, completed: 4, failed: 0 });
    assert.ok(done.in_progress_at && done.finalizing_at && done.completed_at);
    assert.equal(done.error_file_id, null);
    // A finished batch cannot be cancelled.
    assert.equal((await apiError(community.batches.cancel(done.id))).status, 409);
    const out = await lines(community, done.output_file_id);
    assert.deepEqual(
      out.map((l) => l.custom_id),
      ['a', 'b', 'c', 'd'],
    );
    for (const l of out) {
      assert.equal(l.error, null);
      assert.equal(l.response?.status_code, 200);
      const body = l.response?.body as OpenAI.ChatCompletion;
      assert.equal(body.object, 'chat.completion');
      assert.equal(typeof body.choices[0]?.message.content, 'string');
      assert.ok((body.usage?.completion_tokens ?? 0) > 0);
    }
    assert.equal((out[2]!.response!.body as OpenAI.ChatCompletion).model, 'chat-F');
    const outFile = await community.files.retrieve(done.output_file_id!);
    assert.equal(outFile.purpose, 'batch_output');
    // Usage: one event per line, marked batch, with the line's request id.
    const evs = await waitFor('usage events', () => {
      const e = usage.filter((u) => u.requestId.startsWith(`${created.id}:`));
      return e.length >= 4 ? e : null;
    });
    assert.equal(evs.length, 4);
    assert.ok(evs.every((e) => e.batch === true && e.totalTokens > 0 && e.status === 200));
    assert.deepEqual(new Set(evs.map((e) => e.requestId)).size, 4);
    assert.deepEqual(
      out.map((l) => l.response?.request_id),
      [1, 2, 3, 4].map((n) => `${created.id}:${n}`),
    );
  });

  it('runs an embeddings batch through the embedding-service', async () => {
    const input = ['alpha beta', 'gamma delta', 'the quick brown fox'].map((text, i) => ({
      custom_id: `e${i}`,
      method: 'POST',
      url: '/v1/embeddings',
      body: { model: 'embed-model', input: text },
    }));
    const file = await upload(community, jsonl(input));
    const b = await community.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    const done = await settle(community, b.id);
    assert.equal(done.status, 'completed', JSON.stringify(done.errors));
    const out = await lines(community, done.output_file_id);
    assert.equal(out.length, 3);
    for (const l of out) {
      const body = l.response?.body as OpenAI.CreateEmbeddingResponse;
      assert.equal(body.object, 'list');
      assert.ok(Array.isArray(body.data[0]?.embedding) && body.data[0]!.embedding.length > 0);
      assert.ok(body.usage.prompt_tokens > 0);
    }
  });

  it('fails in validating with errors naming the lines, and charges nothing', async () => {
    const text = jsonl([
      chatLine('ok-1'),
      '{"custom_id": "broken", "method": "POST", ',
      { ...chatLine('wrong-url'), url: '/v1/embeddings' },
      chatLine('ok-1'),
      chatLine('premium-only', 'chat-G'),
      { custom_id: 'bad-body', method: 'POST', url: '/v1/chat/completions', body: { model: 'chat-A' } },
      { ...chatLine('bad-temp'), body: { ...chatLine('x').body, temperature: 7 } },
    ]);
    const file = await upload(community, text);
    const b = await community.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await settle(community, b.id);
    assert.equal(done.status, 'failed');
    assert.ok(done.failed_at);
    assert.equal(done.output_file_id, null);
    const errors = done.errors?.data ?? [];
    const byLine = new Map(errors.map((e) => [e.line, e]));
    assert.deepEqual([...byLine.keys()].sort(), [2, 3, 4, 5, 6, 7], JSON.stringify(errors));
    assert.equal(byLine.get(2)?.code, 'invalid_json_line');
    assert.equal(byLine.get(3)?.code, 'mismatched_url');
    assert.equal(byLine.get(4)?.code, 'duplicate_custom_id');
    assert.equal(byLine.get(5)?.param, 'body.model');
    assert.match(byLine.get(5)?.message ?? '', /chat-G/);
    assert.equal(byLine.get(6)?.param, 'body.messages');
    assert.equal(byLine.get(7)?.param, 'body.temperature');
    for (const e of errors) assert.match(e.message ?? '', new RegExp(`^Line ${String(e.line)}`));
    // Nothing ran (a failed batch never reaches in_progress): no usage event for it.
    assert.equal(usage.filter((u) => u.requestId.startsWith(`${b.id}:`)).length, 0);
  });

  it('refuses bad create requests and non-batch files with the spec error body', async () => {
    const e1 = await apiError(
      community.batches.create({
        input_file_id: 'file-nope',
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      }),
    );
    assert.equal(e1.status, 400);
    assert.equal((e1.error as { param?: string }).param, 'input_file_id');
    const file = await upload(community, jsonl([chatLine('x')]));
    const e2 = await apiError(
      community.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/images/generations' as '/v1/chat/completions',
        completion_window: '24h',
      }),
    );
    assert.equal(e2.status, 400);
    assert.equal((e2.error as { param?: string }).param, 'endpoint');
    const e3 = await apiError(
      community.files.create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'fine-tune' }),
    );
    assert.equal(e3.status, 400);
    assert.equal((e3.error as { param?: string }).param, 'purpose');
    const e4 = await apiError(
      community.files.create({ file: await toFile(Buffer.from(''), 'x.jsonl'), purpose: 'batch' }),
    );
    assert.equal(e4.status, 400);
    assert.equal((e4.error as { param?: string }).param, 'file');
    // Over 50,000 lines: refused (the whole body is read, nothing is kept); exactly 50,000 is taken.
    const e5 = await apiError(upload(community, '{}\n'.repeat(50_001)));
    assert.equal(e5.status, 400);
    assert.equal((e5.error as { param?: string }).param, 'file');
    assert.match(e5.message, /50,000 lines/);
    const max = await upload(community, '{}\n'.repeat(50_000));
    assert.equal(max.bytes, 150_000);
  });

  it('cancels a running batch within seconds and finalizes with what completed', async () => {
    const n = 40;
    const input = Array.from({ length: n }, (_, i) => chatLine(`c${i}`, 'chat-slow'));
    const file = await upload(community, jsonl(input));
    const b = await community.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await waitFor(
      'the batch to run',
      async () => (await community.batches.retrieve(b.id)).status === 'in_progress',
      {
        timeoutMs: 10_000,
        everyMs: 50,
      },
    );
    const cancelling = await community.batches.cancel(b.id);
    assert.equal(cancelling.status, 'cancelling');
    assert.ok(cancelling.cancelling_at);
    const t0 = Date.now();
    const done = await settle(community, b.id, 10_000);
    assert.equal(done.status, 'cancelled');
    assert.ok(Date.now() - t0 < 5_000, `cancel took ${Date.now() - t0} ms`);
    const ok = await lines(community, done.output_file_id);
    const err = await lines(community, done.error_file_id);
    // Every input line exactly once across the two files; the lines that never ran say so.
    assert.equal(ok.length + err.length, n);
    assert.deepEqual(new Set([...ok, ...err].map((l) => l.custom_id)).size, n);
    assert.ok(err.length > 0, 'some lines were cancelled');
    assert.ok(err.every((l) => l.error?.code === 'batch_cancelled' && l.response === null));
    assert.equal(done.request_counts?.completed, ok.length);
    assert.equal(done.request_counts?.failed, err.length);
    // Billed: exactly the lines that ran.
    await waitFor(
      'usage of the ran lines',
      () => usage.filter((u) => u.requestId.startsWith(`${b.id}:`)).length >= ok.length,
    );
    assert.equal(usage.filter((u) => u.requestId.startsWith(`${b.id}:`)).length, ok.length);
  });

  it('expires a batch whose completion window passed, keeping what completed', async () => {
    const n = 30;
    const file = await upload(
      community,
      jsonl(Array.from({ length: n }, (_, i) => chatLine(`x${i}`, 'chat-slow'))),
    );
    const b = await community.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await waitFor(
      'the batch to run',
      async () => (await community.batches.retrieve(b.id)).status === 'in_progress',
      {
        timeoutMs: 10_000,
        everyMs: 50,
      },
    );
    // The test clock: the window ends now (the runner compares expires_at with its clock).
    await stack.prisma.batch.update({ where: { id: b.id }, data: { expiresAt: new Date() } });
    const done = await settle(community, b.id, 10_000);
    assert.equal(done.status, 'expired');
    assert.ok(done.expired_at);
    const ok = await lines(community, done.output_file_id);
    const err = await lines(community, done.error_file_id);
    assert.equal(ok.length + err.length, n);
    assert.ok(err.length > 0 && err.every((l) => l.error?.code === 'batch_expired'));
  });

  it('keeps files and batches to their member, and pages lists like OpenAI', async () => {
    const file = await upload(community, jsonl([chatLine('mine')]), 'mine.jsonl');
    const b = await community.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    for (const call of [
      () => inference.files.retrieve(file.id),
      () => inference.files.content(file.id),
      () => inference.files.delete(file.id),
      () => inference.batches.retrieve(b.id),
      () => inference.batches.cancel(b.id),
    ]) {
      assert.equal((await apiError(call())).status, 404);
    }
    const other = await apiError(
      inference.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      }),
    );
    assert.equal(other.status, 400);
    const theirs = await inference.files.list();
    assert.ok(!theirs.data.some((f) => f.id === file.id));
    const theirBatches = await inference.batches.list();
    assert.ok(!theirBatches.data.some((x) => x.id === b.id));

    // Pagination: newest first, `after` cursor, has_more.
    const page1 = await community.files.list({ limit: 2, purpose: 'batch' });
    assert.equal(page1.data.length, 2);
    assert.equal(page1.data[0]?.id, file.id);
    assert.ok(page1.hasNextPage());
    const page2 = await page1.getNextPage();
    assert.ok(!page2.data.some((f) => page1.data.some((g) => g.id === f.id)));
    const all: string[] = [];
    for await (const f of community.files.list({ limit: 3 })) all.push(f.id);
    assert.equal(new Set(all).size, all.length);
    assert.ok(all.includes(file.id));
    const batches = await community.batches.list({ limit: 2 });
    assert.equal(batches.data[0]?.id, b.id);
    assert.ok(batches.hasNextPage());
    const ids: string[] = [];
    for await (const x of community.batches.list({ limit: 2 })) ids.push(x.id);
    assert.ok(ids.length >= 6 && new Set(ids).size === ids.length);

    await settle(community, b.id);
    // Operators: the member's batches with their progress; the runner's line metrics.
    const member = await stack.prisma.member.findFirstOrThrow({ where: { name: 'it-community' } });
    const admin = (await (
      await fetch(`${stack.url}/admin/members/${member.id}/batches?limit=100`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).json()) as { data: { id: string; member_id: string; status: string; progress: number }[] };
    const mine = admin.data.find((x) => x.id === b.id);
    assert.equal(mine?.member_id, member.id);
    assert.equal(mine?.progress, 1);
    assert.ok(admin.data.some((x) => x.status === 'cancelled' && x.progress > 0 && x.progress <= 1));
    const metrics = await (await fetch(`${runner.opsUrl}/metrics`)).text();
    assert.match(metrics, /batch_lines_done_total\{outcome="ok"\} [1-9]/);
    assert.match(metrics, /batch_lines_queued 0/);
    assert.match(metrics, /batch_lines_running 0/);
    const deleted = await community.files.delete(file.id);
    assert.deepEqual(deleted, { id: file.id, object: 'file', deleted: true });
    assert.equal((await apiError(community.files.retrieve(file.id))).status, 404);
  });
});
