// What the gateway adds to a chat request: the same chat-service answered directly over NATS
// (RpcClient, as the gateway calls it) and through the gateway over HTTP with keep-alive.
//
//   node --conditions=source --import ./tools/ts-register.js bench/chat-overhead.ts
//   BENCH_REQUESTS=3000 BENCH_CONCURRENCY=1,8,32 BENCH_MAX_TOKENS=16 node ... bench/chat-overhead.ts
//
// Starts a fresh database (migrated, default catalog, one inference key), the chat-service in a child
// process (the simulator engine, a TEST DOUBLE answering with ttft 0 and itl 0, so the model costs
// nothing) and the gateway in another child process (limits off: bench/limits-overhead.ts measures
// those). Both talk on their own NATS subjects (MODEL_SUBJECT_PREFIX) so no other chat-service on the
// machine answers. For each level of BENCH_CONCURRENCY (requests in flight) it runs a closed loop of
// BENCH_REQUESTS non-streamed chat completions (chat-F, max_tokens BENCH_MAX_TOKENS), directly and
// through the gateway (undici Pool, one keep-alive connection per request in flight), after a
// warm-up; then streamed requests one at a time, for the time to first byte (the first SSE event) and
// to the end. Prints tables; numbers, not pass/fail; everything stops by itself.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  CatalogEntrySchema,
  type ChatCompletionRequest,
  type ServiceRequest,
  Subjects,
} from '@infer/contracts';
import { loadCatalogFile } from '@infer/persistence';
import { connectNats, RpcClient } from '@infer/rpc';
import { Pool } from 'undici';
import { createBenchDatabase, freePort, pct } from './support.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,8,32').split(',').map(Number);
const MAX_TOKENS = Number(process.env.BENCH_MAX_TOKENS ?? 16);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 300);
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const MODEL = 'chat-F';
const TS = ['--conditions=source', '--import', './tools/ts-register.js'];

async function startChild(
  args: string[],
  env: Record<string, string>,
  ready: () => Promise<boolean>,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...TS, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let said = '';
  child.stdout?.on('data', (d) => {
    said += d;
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args[0]} exited with ${child.exitCode}`);
    if (said.includes('ready') || (await ready().catch(() => false))) return child;
    if (Date.now() > deadline) throw new Error(`${args[0]} not ready within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Result {
  path: string;
  concurrency: number;
  ok: number;
  failed: number;
  wallMs: number;
  latencies: number[];
}

async function closedLoop(
  path: string,
  n: number,
  concurrency: number,
  one: () => Promise<boolean>,
): Promise<Result> {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const s = performance.now();
        try {
          if (await one()) ok++;
          else failed++;
        } catch {
          failed++;
        }
        latencies.push(performance.now() - s);
      }
    }),
  );
  return { path, concurrency, ok, failed, wallMs: performance.now() - t0, latencies };
}

async function main(): Promise<void> {
  const prefix = `bench.${randomUUID()}.`;
  const db = await createBenchDatabase();
  const { databaseUrl, key } = db;
  const children: ChildProcess[] = [];
  const nc = await connectNats(NATS_URL, 'chat-overhead-bench');
  let pool: Pool | undefined;
  try {
    const entry = (await loadCatalogFile('config/models.yaml')).models.find((m) => m.id === MODEL);
    if (!entry) throw new Error(`${MODEL} is not in config/models.yaml`);
    const model = CatalogEntrySchema.parse(entry);

    children.push(
      await startChild(
        ['bench/chat-overhead.ts', '--chat-service'],
        { MODEL_SUBJECT_PREFIX: prefix },
        async () => false,
      ),
    );
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    children.push(
      await startChild(
        ['apps/gateway/src/main.ts'],
        {
          DATABASE_URL: databaseUrl,
          HOST: '127.0.0.1',
          PORT: String(port),
          ALLOW_INSECURE_HTTP: '1',
          LOG_LEVEL: 'warn',
          LIMITS_ENABLED: '0',
          MODEL_SUBJECT_PREFIX: prefix,
        },
        async () => (await fetch(`${url}/readyz`)).status === 200,
      ),
    );

    const rpc = new RpcClient(nc);
    const subject = `${prefix}${Subjects.chatCompletions}`;
    const body: ChatCompletionRequest = {
      model: MODEL,
      messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
      max_tokens: MAX_TOKENS,
    };
    const envelope = (stream: boolean): ServiceRequest<ChatCompletionRequest> => ({
      requestId: randomUUID(),
      memberId: db.memberId,
      keyId: db.keyId,
      model,
      body: stream ? { ...body, stream: true } : body,
      deadline: Date.now() + 30_000,
      stream,
    });
    const direct = async () => {
      const end = await rpc.call(subject, envelope(false), { idleTimeoutMs: 30_000 });
      return end.usage.completion_tokens === MAX_TOKENS;
    };
    const jsonBody = JSON.stringify(body);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const viaGateway = async () => {
      const res = await pool!.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers,
        body: jsonBody,
      });
      const text = await res.body.text();
      return res.statusCode === 200 && text.includes('"chat.completion"');
    };

    const rows: Record<string, string | number>[] = [];
    for (const c of CONCURRENCY) {
      await pool?.close();
      pool = new Pool(url, { connections: c, pipelining: 1, keepAliveTimeout: 30_000 });
      // Warm-up: JIT, connections, key cache.
      await closedLoop('warm', Math.min(300, REQUESTS), c, direct);
      await closedLoop('warm', Math.min(300, REQUESTS), c, viaGateway);
      const d = await closedLoop('direct (NATS RPC)', REQUESTS, c, direct);
      const g = await closedLoop('gateway (HTTP)', REQUESTS, c, viaGateway);
      for (const r of [d, g]) {
        rows.push({
          path: r.path,
          'in flight': r.concurrency,
          requests: `${r.ok}${r.failed ? ` (+${r.failed} failed)` : ''}`,
          'req/s': Math.round((r.ok + r.failed) / (r.wallMs / 1000)),
          'p50 ms': pct(r.latencies, 50).toFixed(2),
          'p99 ms': pct(r.latencies, 99).toFixed(2),
        });
      }
      rows.push({
        path: 'gateway adds',
        'in flight': c,
        requests: '',
        'req/s': '',
        'p50 ms': `+${(pct(g.latencies, 50) - pct(d.latencies, 50)).toFixed(2)}`,
        'p99 ms': `+${(pct(g.latencies, 99) - pct(d.latencies, 99)).toFixed(2)}`,
      });
    }

    // Streams, one at a time: time to the first chunk and to the end.
    const ttfb: Record<string, number[]> = { direct: [], gateway: [] };
    const total: Record<string, number[]> = { direct: [], gateway: [] };
    await pool?.close();
    pool = new Pool(url, { connections: 1, keepAliveTimeout: 30_000 });
    const streamBody = JSON.stringify({ ...body, stream: true });
    for (let i = 0; i < STREAMS + 20; i++) {
      const warm = i < 20;
      let s = performance.now();
      const st = rpc.stream(subject, envelope(true), { idleTimeoutMs: 30_000 });
      let first = 0;
      for await (const _ of st) if (!first) first = performance.now() - s;
      await st.end;
      if (!warm) {
        ttfb.direct?.push(first);
        total.direct?.push(performance.now() - s);
      }
      s = performance.now();
      const res = await pool.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers,
        body: streamBody,
      });
      first = 0;
      let text = '';
      for await (const chunk of res.body) {
        if (!first) first = performance.now() - s;
        text += chunk;
      }
      if (!text.endsWith('data: [DONE]\n\n'))
        throw new Error(`stream did not end with [DONE]: ${text.slice(-200)}`);
      if (!warm) {
        ttfb.gateway?.push(first);
        total.gateway?.push(performance.now() - s);
      }
    }
    const streamRows = (['direct', 'gateway'] as const).map((k) => ({
      path: k === 'direct' ? 'direct (NATS RPC)' : 'gateway (HTTP SSE)',
      streams: STREAMS,
      'TTFB p50 ms': pct(ttfb[k] ?? [], 50).toFixed(2),
      'TTFB p99 ms': pct(ttfb[k] ?? [], 99).toFixed(2),
      'end p50 ms': pct(total[k] ?? [], 50).toFixed(2),
      'end p99 ms': pct(total[k] ?? [], 99).toFixed(2),
    }));

    console.log(
      `\nchat-overhead: ${MODEL} on the simulator (ttft 0, itl 0), max_tokens ${MAX_TOKENS}, ${REQUESTS} requests per row, Node ${process.version}, limits off\n`,
    );
    console.log('Non-streamed chat completions (closed loop):');
    console.table(rows);
    console.log(`Streamed chat completions (${MAX_TOKENS + 2} chunks each), one at a time:`);
    console.table(streamRows);
  } finally {
    await pool?.close().catch(() => undefined);
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(
      children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once('exit', r)))),
    );
    await nc.close();
    await db.drop();
  }
}

// ---- child mode: the chat-service on the bench's subjects ----
if (process.argv[2] === '--chat-service') {
  const { startChatService } = await import('@infer/chat-service/public');
  await startChatService({
    env: { ...process.env, LOG_LEVEL: 'warn' },
    subjectPrefix: process.env.MODEL_SUBJECT_PREFIX ?? '',
    installSignalHandlers: true,
  });
  process.stdout.write('ready\n');
} else {
  await main();
}
