// The cost of the Nest transport (issue 15): the same two handlers served by the raw NATS RPC server
// (libs/rpc rpc.ts, what the services ran before) and by a NestJS microservice on our custom
// transport (NatsRpcTransport: @MessagePattern controllers, Nest's pipeline around each call), measured
// side by side in one run, alternating the two to share the machine's noise.
//
//   node --conditions=source --import ./tools/ts-register.js bench/transport.ts
//   BENCH_REQUESTS=5000 BENCH_ROUNDS=2 node ... bench/transport.ts
//
// Each server runs in its own child process on the shared NATS (its own subject prefix). The client
// (this process) measures: unary round trip at 1 in flight (p50/p99), the time to the first streamed
// frame at 1 in flight (p50/p99), and a closed loop at 32 in flight (req/s, CPU us per request in the
// client and in the server, read from process.cpuUsage() and /proc/<pid>/stat). Numbers, not pass/fail.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { CatalogEntry, EndFrame, ServiceRequest } from '@infer/contracts';
import {
  connectNats,
  type HandlerContext,
  NatsRpcTransport,
  PassThroughRpcFilter,
  RpcClient,
  RpcServer,
} from '@infer/rpc';
import { createLogger } from '@infer/telemetry';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { pct } from './support.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TS = ['--conditions=source', '--import', './tools/ts-register.js'];
const USAGE = { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 };

// ---- the server side (child process) -------------------------------------------------------------

const unary = (req: ServiceRequest<{ text: string }>): Promise<EndFrame> =>
  Promise.resolve({ data: { text: req.body.text }, usage: USAGE });
const streamed = (_req: ServiceRequest<unknown>, ctx: HandlerContext): Promise<EndFrame> => {
  ctx.emit({ delta: 'hello' });
  return Promise.resolve({ usage: USAGE });
};

@Controller()
class BenchController {
  @MessagePattern('bench.unary')
  unary(@Payload() req: ServiceRequest<{ text: string }>): Promise<EndFrame> {
    return unary(req);
  }
  @MessagePattern('bench.stream')
  stream(@Payload() req: ServiceRequest<unknown>, @Ctx() ctx: HandlerContext): Promise<EndFrame> {
    return streamed(req, ctx);
  }
}

@Module({ controllers: [BenchController] })
class BenchModule {}

async function serve(kind: string, prefix: string): Promise<void> {
  const nc = await connectNats(NATS_URL, `bench-${kind}`);
  const log = createLogger('bench', 'silent');
  const queue = `bench-${randomUUID()}`;
  if (kind === 'raw') {
    const rpc = new RpcServer(nc, queue, log);
    rpc.handle(`${prefix}bench.unary`, unary);
    rpc.handle(`${prefix}bench.stream`, streamed);
  } else {
    const app = await NestFactory.createMicroservice(BenchModule, {
      strategy: new NatsRpcTransport({ nc, queue, log, subjectPrefix: prefix }),
      logger: false,
    });
    app.useGlobalFilters(new PassThroughRpcFilter());
    await app.listen();
  }
  await nc.flush();
  process.stdout.write('ready\n');
}

// ---- the client side -----------------------------------------------------------------------------

const model = { id: 'bench' } as CatalogEntry;
const envelope = (stream: boolean): ServiceRequest<{ text: string }> => ({
  requestId: randomUUID(),
  memberId: 'm',
  keyId: 'k',
  model,
  body: { text: 'ping' },
  deadline: Date.now() + 30_000,
  stream,
});

function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000; // clock ticks (100/s) -> us
}

async function startServer(kind: string, prefix: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...TS, 'bench/transport.ts', 'serve', kind, prefix], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code})`)));
  });
  return child;
}

interface Result {
  unaryP50: number;
  unaryP99: number;
  firstP50: number;
  firstP99: number;
  rps: number;
  clientUs: number;
  serverUs: number;
}

async function measure(client: RpcClient, prefix: string, server: ChildProcess): Promise<Result> {
  const opts = { idleTimeoutMs: 10_000 };
  const unarySubject = `${prefix}bench.unary`;
  const streamSubject = `${prefix}bench.stream`;
  for (let i = 0; i < 500; i++) await client.call(unarySubject, envelope(false), opts); // warm-up
  const lat: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const t = performance.now();
    await client.call(unarySubject, envelope(false), opts);
    lat.push(performance.now() - t);
  }
  const first: number[] = [];
  for (let i = 0; i < REQUESTS / 2; i++) {
    const t = performance.now();
    const st = client.stream(streamSubject, envelope(true), opts);
    for await (const _ of st) {
      first.push(performance.now() - t);
    }
    await st.end;
  }
  // Closed loop, 32 in flight: throughput and CPU per request on both sides.
  const total = REQUESTS * 5;
  let next = 0;
  const c0 = process.cpuUsage();
  const s0 = cpuOf(server.pid as number);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next++ < total) await client.call(unarySubject, envelope(false), opts);
    }),
  );
  const elapsed = performance.now() - t0;
  const c1 = process.cpuUsage(c0);
  const serverUs = cpuOf(server.pid as number) - s0;
  return {
    unaryP50: pct(lat, 50),
    unaryP99: pct(lat, 99),
    firstP50: pct(first, 50),
    firstP99: pct(first, 99),
    rps: (total / elapsed) * 1000,
    clientUs: (c1.user + c1.system) / total,
    serverUs: serverUs / total,
  };
}

/**
 * What Nest's pipeline adds to one call, in-process and without NATS: the handler Nest registered for
 * a @MessagePattern (guards, pipes, interceptors and filters around the controller method) against the
 * same function called directly. Precise where the cross-process figures are noisy.
 */
async function pipelineCost(): Promise<{ direct: number; nest: number }> {
  const nc = await connectNats(NATS_URL, 'bench-transport-pipeline');
  const transport = new NatsRpcTransport({
    nc,
    queue: `bench-${randomUUID()}`,
    log: createLogger('bench', 'silent'),
    subjectPrefix: `bench.${randomUUID()}.`,
  });
  const app = await NestFactory.createMicroservice(BenchModule, { strategy: transport, logger: false });
  app.useGlobalFilters(new PassThroughRpcFilter());
  await app.listen();
  const handler = transport.getHandlers().get('bench.unary');
  if (!handler) throw new Error('no handler');
  const req = envelope(false);
  const ctx = {} as HandlerContext;
  const n = 300_000;
  const best = { direct: Infinity, nest: Infinity };
  for (let round = 0; round < 3; round++) {
    let t0 = performance.now();
    for (let i = 0; i < n; i++) await unary(req);
    best.direct = Math.min(best.direct, ((performance.now() - t0) / n) * 1000);
    t0 = performance.now();
    for (let i = 0; i < n; i++) await handler(req, ctx);
    best.nest = Math.min(best.nest, ((performance.now() - t0) / n) * 1000);
  }
  await app.close();
  await nc.close();
  return best;
}

async function main(): Promise<void> {
  const pipeline = await pipelineCost();
  const nc = await connectNats(NATS_URL, 'bench-transport-client');
  const client = new RpcClient(nc);
  const results: Record<string, Result[]> = { raw: [], nest: [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of ['raw', 'nest']) {
        const prefix = `bench.${randomUUID()}.`;
        const server = await startServer(kind, prefix);
        try {
          results[kind]?.push(await measure(client, prefix, server));
        } finally {
          server.kill('SIGKILL');
        }
      }
    }
  } finally {
    await nc.close();
  }
  const med = (xs: number[]) => pct(xs, 50);
  const row = (kind: string) => {
    const rs = results[kind] ?? [];
    const f = (k: keyof Result, d = 1) => med(rs.map((r) => r[k])).toFixed(d);
    return `| ${kind.padEnd(21)} | ${f('unaryP50', 3)} | ${f('unaryP99', 3)} | ${f('firstP50', 3)} | ${f('firstP99', 3)} | ${f('rps', 0)} | ${f('clientUs')} | ${f('serverUs')} |`;
  };
  console.log(`\n${REQUESTS} requests per measure, ${ROUNDS} rounds alternating; medians of the rounds\n`);
  console.log(
    '| server                | unary p50 ms | unary p99 ms | 1st frame p50 ms | 1st frame p99 ms | req/s @32 | client CPU us/req | server CPU us/req |',
  );
  console.log(
    '| --------------------- | ------------ | ------------ | ---------------- | ---------------- | --------- | ----------------- | ----------------- |',
  );
  console.log(row('raw'));
  console.log(row('nest'));
  const r = results.raw ?? [];
  const n = results.nest ?? [];
  const ratio = (k: keyof Result) => (med(n.map((x) => x[k])) / med(r.map((x) => x[k]))).toFixed(3);
  console.log(
    `\nnest / raw: unary p50 ${ratio('unaryP50')}, first frame p50 ${ratio('firstP50')}, server CPU per request ${ratio('serverUs')}, req/s ${ratio('rps')}`,
  );
  console.log(
    `Nest pipeline per call (in-process, best of 3 x 300k): ${pipeline.nest.toFixed(3)} us vs ${pipeline.direct.toFixed(3)} us for the bare handler: +${(pipeline.nest - pipeline.direct).toFixed(3)} us per request`,
  );
}

if (process.argv[2] === 'serve') {
  await serve(process.argv[3] ?? 'raw', process.argv[4] ?? '');
} else {
  await main();
}
