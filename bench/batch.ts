// A 50,000-line embeddings batch in the low-priority lane, and what it does to interactive chat:
// chat latency measured side by side without and with the batch running, and the batch runner's memory
// as the batch goes (flat: the JSONL file is streamed in and out).
//
//   node --conditions=source --import ./tools/ts-register.js bench/batch.ts
//   BENCH_LINES=50000 BENCH_RPS=20 BENCH_SECONDS=30 BENCH_YIELD=1 BENCH_CAP=4 node ... bench/batch.ts
//
// Starts a fresh database (default catalog, one inference key), the chat-service (the simulator engine:
// a TEST DOUBLE with ttft 0 / itl 0, so a chat request is all platform overhead), the embedding-service
// (the catalog's embed-model on its embedded CPU engine), the gateway and the batch runner, each a
// child process on its own NATS subjects, BullMQ prefix and file directory. Interactive traffic is an
// open loop of BENCH_RPS non-streamed chat-F requests a second (max_tokens 16) for BENCH_SECONDS:
// first alone (baseline), then while the batch runs. The batch runner's RSS is sampled from /proc
// every 250 ms. Prints tables; numbers, not pass/fail; everything stops by itself.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { createBenchDatabase, freePort, pct } from './support.js';

const LINES = Number(process.env.BENCH_LINES ?? 50_000);
const RPS = Number(process.env.BENCH_RPS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const YIELD = process.env.BENCH_YIELD ?? '1';
const CAP = process.env.BENCH_CAP ?? '4';
/** Vectors cut to this size and sent as base64 (as bulk clients do): 4096 floats as JSON are ~88 KB a line. */
const DIMENSIONS = Number(process.env.BENCH_DIMENSIONS ?? 256);
const TS = ['--conditions=source', '--import', './tools/ts-register.js'];

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function startChild(
  args: string[],
  env: Record<string, string>,
  ready: (out: string) => Promise<boolean>,
) {
  const child = spawn(process.execPath, [...TS, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let said = '';
  child.stdout?.on('data', (d) => {
    said += d;
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args[0]} exited with ${child.exitCode}: ${said}`);
    if (await ready(said).catch(() => false)) return child;
    if (Date.now() > deadline) throw new Error(`${args[0]} not ready within 120 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Open loop: one chat request every 1/RPS s for `seconds`, whatever the answers take. */
async function interactive(client: OpenAI, seconds: number): Promise<{ lat: number[]; failed: number }> {
  const lat: number[] = [];
  let failed = 0;
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; performance.now() - t0 < seconds * 1000; i++) {
    const due = t0 + (i * 1000) / RPS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      (async () => {
        const s = performance.now();
        try {
          await client.chat.completions.create({
            model: 'chat-F',
            messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
            max_tokens: 16,
          });
          lat.push(performance.now() - s);
        } catch {
          failed++;
        }
      })(),
    );
  }
  await Promise.all(pending);
  return { lat, failed };
}

async function main(): Promise<void> {
  const tag = randomUUID().slice(0, 8);
  const dir = mkdtempSync(join(tmpdir(), 'batch-bench-'));
  const db = await createBenchDatabase();
  const children: ChildProcess[] = [];
  const env = {
    DATABASE_URL: db.databaseUrl,
    MODEL_SUBJECT_PREFIX: `bench${tag}.`,
    BULLMQ_PREFIX: `benchbatch${tag}`,
    USAGE_STREAM: `USAGE_B${tag}`,
    USAGE_SUBJECT_ROOT: `usage_b${tag}.events`,
    FILE_STORE: 'fs',
    FILE_STORE_DIR: join(dir, 'files'),
    LIMITS_ENABLED: '0',
  };
  try {
    for (const svc of ['chat', 'embedding']) {
      children.push(
        await startChild(['bench/batch.ts', `--${svc}-service`], env, async (out) => out.includes('ready')),
      );
    }
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const gateway = await startChild(
      ['apps/gateway/src/main.ts'],
      { ...env, HOST: '127.0.0.1', PORT: String(port), ALLOW_INSECURE_HTTP: '1' },
      async () => (await fetch(`${url}/readyz`)).status === 200,
    );
    children.push(gateway);
    const runner = await startChild(
      ['apps/gateway/src/batch-runner.ts'],
      {
        ...env,
        LOG_LEVEL: 'info',
        BATCH_MODEL_CONCURRENCY: CAP,
        BATCH_YIELD_CONCURRENCY: YIELD,
        BATCH_CHECK_MS: '500',
      },
      async (out) => out.includes('batch runner ready'),
    );
    children.push(runner);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: db.key, maxRetries: 0, timeout: 60_000 });

    // Warm-up, then the baseline: interactive traffic alone.
    await interactive(client, 3);
    const base = await interactive(client, SECONDS);

    // The input file: LINES embeddings requests (built here by the client; the platform streams it).
    const text = (i: number) =>
      `Document ${i} on topic ${i % 97}: the quick brown fox ${i % 13 ? 'jumps over' : 'sleeps under'} the lazy dog ${i % 7} times.`;
    const lines: string[] = [];
    for (let i = 0; i < LINES; i++)
      lines.push(
        JSON.stringify({
          custom_id: `r${i}`,
          method: 'POST',
          url: '/v1/embeddings',
          body: { model: 'embed-model', input: text(i), dimensions: DIMENSIONS, encoding_format: 'base64' },
        }),
      );
    const gwBefore = rssMb(gateway.pid!);
    const tUp = performance.now();
    const file = await client.files.create({
      file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'bench.jsonl'),
      purpose: 'batch',
    });
    const uploadMs = performance.now() - tUp;
    const gwAfter = rssMb(gateway.pid!);
    lines.length = 0;

    const rss: { at: number; done: number; mb: number }[] = [];
    let done = 0;
    const sampler = setInterval(() => rss.push({ at: performance.now(), done, mb: rssMb(runner.pid!) }), 250);
    const runnerIdleMb = rssMb(runner.pid!);
    const t0 = performance.now();
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    const progress = setInterval(() => {
      void client.batches
        .retrieve(batch.id)
        .then((b) => {
          done = (b.request_counts?.completed ?? 0) + (b.request_counts?.failed ?? 0);
        })
        .catch(() => undefined);
    }, 500);
    for (;;) {
      const b = await client.batches.retrieve(batch.id);
      if (b.status === 'in_progress') break;
      if (b.status === 'failed') throw new Error(JSON.stringify(b.errors));
      await new Promise((r) => setTimeout(r, 100));
    }
    const doneBefore = done;
    const withBatch = await interactive(client, SECONDS);
    const linesDuringInteractive = done - doneBefore;
    let final: OpenAI.Batch;
    for (;;) {
      final = await client.batches.retrieve(batch.id);
      if (['completed', 'failed', 'expired', 'cancelled'].includes(final.status)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const batchMs = performance.now() - t0;
    // The baseline again, after the batch: how much the machine's own load moved meanwhile.
    const after = await interactive(client, SECONDS);
    clearInterval(progress);
    clearInterval(sampler);
    // The output file streamed back: lines and bytes.
    let outLines = 0;
    let outBytes = 0;
    if (final.output_file_id) {
      const res = await client.files.content(final.output_file_id);
      const reader = res.body!.getReader();
      for (;;) {
        const { done: end, value } = await reader.read();
        if (end) break;
        outBytes += value.length;
        for (const c of value) if (c === 10) outLines++;
      }
    }

    const row = (name: string, r: { lat: number[]; failed: number }) =>
      `| ${name.padEnd(22)} | ${String(r.lat.length).padStart(5)} | ${String(r.failed).padStart(3)} | ${pct(r.lat, 50).toFixed(2).padStart(7)} | ${pct(r.lat, 95).toFixed(2).padStart(7)} | ${pct(r.lat, 99).toFixed(2).padStart(7)} |`;
    console.log(
      `\nInteractive chat (chat-F, open loop ${RPS} req/s for ${SECONDS} s each; batch lane cap ${CAP}, yield cap ${YIELD})\n`,
    );
    console.log('| traffic                | ok    | err | p50 ms  | p95 ms  | p99 ms  |');
    console.log('| ---------------------- | ----- | --- | ------- | ------- | ------- |');
    console.log(row('alone (baseline)', base));
    console.log(row('with the batch running', withBatch));
    console.log(row('alone again (after)', after));
    const p50a = (pct(base.lat, 50) + pct(after.lat, 50)) / 2;
    const p50b = pct(withBatch.lat, 50);
    console.log(
      `\np50 change against the mean of the two baselines: ${(((p50b - p50a) / p50a) * 100).toFixed(1)} % (goal: at most +20 %)`,
    );
    console.log(
      `batch lines done while the interactive traffic ran: ${linesDuringInteractive} in ${SECONDS} s`,
    );
    console.log(
      `\nBatch: ${LINES} embeddings lines, status ${final.status}, counts ${JSON.stringify(final.request_counts)}`,
    );
    console.log(
      `  upload ${(uploadMs / 1000).toFixed(1)} s (gateway RSS ${gwBefore.toFixed(0)} -> ${gwAfter.toFixed(0)} MB)`,
    );
    console.log(
      `  create -> ${final.status}: ${(batchMs / 1000).toFixed(1)} s, ${((LINES / batchMs) * 1000).toFixed(0)} lines/s overall`,
    );
    console.log(`  output file: ${outLines} lines, ${(outBytes / 1e6).toFixed(1)} MB`);
    console.log('\nBatch runner RSS while the batch ran\n');
    console.log('| lines done | RSS MB |');
    console.log('| ---------- | ------ |');
    console.log(`| idle       | ${runnerIdleMb.toFixed(0).padStart(6)} |`);
    for (const f of [0.1, 0.25, 0.5, 0.75, 0.9, 1]) {
      const s = rss.find((x) => x.done >= f * LINES) ?? rss.at(-1);
      if (s) console.log(`| ${String(s.done).padStart(10)} | ${s.mb.toFixed(0).padStart(6)} |`);
    }
    console.log(
      `| peak       | ${Math.max(...rss.map((x) => x.mb))
        .toFixed(0)
        .padStart(6)} |`,
    );
  } finally {
    for (const c of children.reverse()) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--chat-service') {
  const { startChatService } = await import('@infer/chat-service/public');
  await startChatService({
    env: process.env,
    subjectPrefix: process.env.MODEL_SUBJECT_PREFIX ?? '',
    installSignalHandlers: true,
  });
  process.stdout.write('ready\n');
} else if (process.argv[2] === '--embedding-service') {
  const { startEmbeddingService } = await import('@infer/embedding-service/public');
  await startEmbeddingService({
    env: process.env,
    subjectPrefix: process.env.MODEL_SUBJECT_PREFIX ?? '',
    installSignalHandlers: true,
  });
  process.stdout.write('ready\n');
} else {
  await main();
  process.exit(0);
}
