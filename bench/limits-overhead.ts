// What the limits add to a request: latency and gateway CPU per request, limits on vs off.
//
//   node --conditions=source --import ./tools/ts-register.js bench/limits-overhead.ts
//   BENCH_REQUESTS=4000 BENCH_CONCURRENCY=1,32 node ... bench/limits-overhead.ts
//   BENCH_REDIS=cluster node ... bench/limits-overhead.ts   (both gateways on a private 3-primary
//                                                            Redis Cluster started here)
//
// Starts two gateway processes on the same fresh database, Redis and NATS, one with LIMITS_ENABLED=1
// and one with LIMITS_ENABLED=0, and the chat-service in this process with the simulator engine (a
// test double answering at once), so that what differs between the two runs is the gateway's work.
// The key's limits are raised out of reach (every check still runs: key rpm, tokens per minute,
// monthly allowance, concurrency lease) so nothing is refused. For each level of BENCH_CONCURRENCY
// (requests in flight, default 1 and 16) each mode runs the same closed-loop load on chat-A
// non-streamed, twice, alternating; the table shows the second round. A request that takes over 30 s
// counts as failed. CPU is the gateway process's user+system time from /proc/<pid>/stat over the round.
// Numbers, not pass/fail; bounded in count and time; everything stops by itself.
import { type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { startChatService } from '@infer/chat-service/public';
import { createRedisClient } from '@infer/rpc';
import { type PrivateRedisCluster, privateRedisCluster } from '../test/support/private-servers.js';
import { createBenchDatabase, pct, type Round, round, startGatewayProcess } from './support.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16').split(',').map(Number);

async function main(): Promise<void> {
  const prefix = `limbench:${randomBytes(4).toString('hex')}:`;
  const db = await createBenchDatabase();
  const { databaseUrl, key, keys } = db;
  const children: ChildProcess[] = [];
  // NATS subjects of this run only, so that no other chat-service on this NATS answers our requests.
  const subjectPrefix = `bench.${randomBytes(6).toString('hex')}.`;
  const chat = await startChatService({ env: { ...process.env, LOG_LEVEL: 'silent' }, subjectPrefix });
  const cluster: PrivateRedisCluster | null =
    process.env.BENCH_REDIS === 'cluster' ? await privateRedisCluster(3, 0) : null;
  try {
    const huge = 1_000_000_000;
    await keys.setLimits(db.keyId, {
      key: { requests_per_minute: huge, concurrent: huge },
      models: { 'chat-A': { tokens_per_minute: huge, allowance_tokens: huge } },
    });
    const env = {
      DATABASE_URL: databaseUrl,
      LIMITS_REDIS_PREFIX: prefix,
      MODEL_SUBJECT_PREFIX: subjectPrefix,
      ...(cluster ? { REDIS_URL: cluster.url } : {}),
    };
    const on = await startGatewayProcess({ ...env, LIMITS_ENABLED: '1' });
    children.push(on.child);
    const off = await startGatewayProcess({ ...env, LIMITS_ENABLED: '0' });
    children.push(off.child);
    const modes = [
      { mode: 'limits off', ...off },
      { mode: 'limits on', ...on },
    ];
    // Warm-up (JIT, connections, key cache, script cache), then two measured rounds, alternating.
    for (const m of modes) await round(m.mode, m.url, m.child.pid!, key, Math.min(300, REQUESTS), 8);
    const results: Round[] = [];
    for (const c of CONCURRENCY) {
      let last: Round[] = [];
      for (let r = 0; r < 2; r++) {
        last = [];
        for (const m of modes) last.push(await round(m.mode, m.url, m.child.pid!, key, REQUESTS, c));
      }
      results.push(...last);
    }
    const rows = results.map((r) => ({
      mode: r.mode,
      'in flight': r.concurrency,
      requests: `${r.ok}${r.failed ? ` (+${r.failed} failed)` : ''}`,
      'req/s': ((r.ok + r.failed) / (r.wallMs / 1000)).toFixed(0),
      'p50 ms': pct(r.latencies, 50).toFixed(2),
      'p95 ms': pct(r.latencies, 95).toFixed(2),
      'p99 ms': pct(r.latencies, 99).toFixed(2),
      'gateway CPU ms/req': (r.cpuMs / (r.ok + r.failed)).toFixed(3),
    }));
    console.log(
      `\nlimits overhead: ${REQUESTS} requests per round, chat-A non-streamed (simulator), ` +
        `Redis: ${cluster ? 'a private 3-primary cluster' : 'one primary'}, ` +
        `${new Date().toISOString()}\n`,
    );
    console.table(rows);
    for (let i = 0; i + 1 < results.length; i += 2) {
      const o = results[i]!;
      const n = results[i + 1]!;
      console.log(
        `${o.concurrency} in flight: the limits add p50 ${(pct(n.latencies, 50) - pct(o.latencies, 50)).toFixed(2)} ms, ` +
          `p99 ${(pct(n.latencies, 99) - pct(o.latencies, 99)).toFixed(2)} ms, ` +
          `gateway CPU ${(n.cpuMs / REQUESTS - o.cpuMs / REQUESTS).toFixed(3)} ms per request`,
      );
    }
    console.log(
      '(with limits on, each request is one admission record and one settlement record in the batched limits script)',
    );
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(
      children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))),
    );
    await chat.stop();
    if (cluster) await cluster.destroy();
    else {
      const redis = createRedisClient(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
      const left = await redis.keys(`${prefix}*`);
      for (const k of left) await redis.del(k);
      redis.disconnect();
    }
    await db.drop();
  }
}

await main();
