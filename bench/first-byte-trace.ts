// Where a stream's first byte waits (issue 13: "stream first byte added over the upstream <= 1 ms p50 at
// low load, limits on"): the hops of one streamed chat request through the production stack, timed from
// the kernel's view of every process on the path.
//
//   node --conditions=source --import ./tools/ts-register.js bench/first-byte-trace.ts
//        [--streams 300] [--warmup 10] [--model chat-up|chat-A] [--no-build] [--memory-limit pod|none]
//
// Starts the stack of bench/stack.ts (bench/stack/lib.ts; the limits-on gateway only), warms the stream
// path for `--warmup` s (back to back, as bench/stack.ts does before its first-byte figures), then sends
// `--streams` streams one at a time while `perf record` (Debian's linux-perf; root) records the socket
// system calls of the bench client, the gateway, chat-service, the fake upstream, Redis and NATS
// (tracepoints syscalls:sys_{enter,exit}_read and sys_enter_write/writev). Each socket is told apart by
// its peer's port (/proc/<pid>/fd and /proc/net/tcp), so each request's milestones are found in order:
// the gateway reads the request, writes the admission to Redis, reads the answer, publishes to NATS;
// chat-service reads it, writes to the upstream, reads the answer, publishes the first frame; the gateway
// reads it and writes the client's first bytes, which the client reads. Prints the median and p90 of
// each hop over the requests, and the first byte the client measured meanwhile (perf costs a little).
// Numbers, not pass/fail. Results: bench/results/data-path-issue-13.md, "Where the first byte waits".
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildProduction, chatBody, resolveMemoryLimitMiB, startStack, timedStream } from './stack/lib.js';
import { pct } from './support.js';

const { values: opt } = parseArgs({
  options: {
    streams: { type: 'string', default: '300' },
    warmup: { type: 'string', default: '10' },
    model: { type: 'string', default: 'chat-up' },
    'no-build': { type: 'boolean', default: false },
    'memory-limit': { type: 'string', default: 'pod' },
  },
});

try {
  execFileSync('perf', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('needs Linux perf: apt-get install linux-perf (and root, for the syscall tracepoints)');
  process.exit(1);
}

/** Socket inode -> [local port, remote port], from /proc/net/tcp and tcp6. */
function tcpPorts(): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = (addr: string | undefined) => Number.parseInt(addr?.split(':')[1] ?? '0', 16);
      out.set(f[9] ?? '', [port(f[1]), port(f[2])]);
    }
  }
  return out;
}

/** fd -> the port of its peer (or, for a listening or accepted socket, its own port with a minus sign). */
function socketPeers(
  pid: number,
  ports: Map<string, [number, number]>,
  servers: Set<number>,
): Map<number, number> {
  const out = new Map<number, number>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let link: string;
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
    const p = inode ? ports.get(inode) : undefined;
    if (!p) continue;
    // A connection accepted by a server of ours is named by the server's port, negated.
    out.set(Number(fd), servers.has(p[0]) ? -p[0] : p[1]);
  }
  return out;
}

interface Ev {
  t: number;
  pid: number;
  kind: 'r' | 'w';
  fd: number;
  n: number;
}

/** perf script lines -> socket reads (at their return, with data) and writes (at entry). */
function parsePerf(text: string, threadPid: (tid: number) => number): Ev[] {
  const evs: Ev[] = [];
  const pendingRead = new Map<number, number>();
  const re = /^\s*\S.*?\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+syscalls:sys_(enter|exit)_(\w+):\s*(.*)$/;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const tid = Number(m[1]);
    const t = Number(m[2]) * 1000;
    const [dir, call, args] = [m[3], m[4], m[5] ?? ''];
    const fd = /fd: 0x([0-9a-f]+)/.exec(args);
    if (dir === 'enter' && call === 'read') {
      if (fd?.[1]) pendingRead.set(tid, Number.parseInt(fd[1], 16));
    } else if (dir === 'exit' && call === 'read') {
      const rfd = pendingRead.get(tid);
      pendingRead.delete(tid);
      const n = Number.parseInt(args.trim(), 16);
      // A negative return (EAGAIN) prints as a large unsigned number.
      if (rfd !== undefined && n > 0 && n < 1 << 30)
        evs.push({ t, pid: threadPid(tid), kind: 'r', fd: rfd, n });
    } else if (dir === 'enter' && fd?.[1]) {
      evs.push({ t, pid: threadPid(tid), kind: 'w', fd: Number.parseInt(fd[1], 16), n: 0 });
    }
  }
  return evs.sort((a, b) => a.t - b.t);
}

async function main(): Promise<void> {
  if (!opt['no-build']) {
    console.log('building the production output (tools/build.js) ...');
    buildProduction();
  }
  const limit = resolveMemoryLimitMiB(opt['memory-limit']);
  const stack = await startStack({ withGatewayOff: false, ...(limit > 0 ? { memoryLimitMiB: limit } : {}) });
  const pool = new Pool(stack.gatewayOn.url, { connections: 1 });
  try {
    // The same request as bench/stack.ts's first-byte figures.
    const body = chatBody(opt.model, true, 2);
    const once = async () => (await timedStream(pool, '/v1/chat/completions', body, stack.key))[0];
    const warmUntil = performance.now() + Number(opt.warmup) * 1000;
    while (performance.now() < warmUntil) await once();

    const gwPort = Number(new URL(stack.gatewayOn.url).port);
    const upPort = Number(new URL(stack.upstream.url).port);
    const who: Record<string, number> = {
      client: process.pid,
      gateway: stack.gatewayOn.pid,
      chat: stack.chat.pid,
      upstream: stack.upstream.pid,
    };
    if (stack.redisPid) who.redis = stack.redisPid;
    if (stack.natsPid) who.nats = stack.natsPid;
    const ports = tcpPorts();
    const servers = new Set([gwPort, upPort, 6379, 4222]);
    const peers = new Map(Object.values(who).map((pid) => [pid, socketPeers(pid, ports, servers)]));
    // Threads of every process (NATS and Redis run several): tid -> pid.
    const tidPid = new Map<number, number>();
    for (const pid of Object.values(who))
      for (const tid of readdirSync(`/proc/${pid}/task`)) tidPid.set(Number(tid), pid);

    const data = 'var/bench/first-byte-trace.data';
    mkdirSync('var/bench', { recursive: true });
    const perf = spawn(
      'perf',
      [
        'record',
        '-q',
        '-o',
        data,
        '-e',
        'syscalls:sys_enter_read,syscalls:sys_exit_read,syscalls:sys_enter_write,syscalls:sys_enter_writev',
        '-p',
        Object.values(who).join(','),
      ],
      { stdio: 'inherit' },
    );
    await new Promise((r) => setTimeout(r, 1500));
    const measured: number[] = [];
    for (let i = 0; i < Number(opt.streams); i++) measured.push(await once());
    await new Promise((r) => setTimeout(r, 200));
    perf.kill('SIGINT');
    await new Promise((r) => perf.once('exit', r));

    const evs = parsePerf(
      execFileSync('perf', ['script', '-i', data], {
        maxBuffer: 1 << 30,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
      (tid) => tidPid.get(tid) ?? tid,
    );
    const peer = (e: Ev) => peers.get(e.pid)?.get(e.fd);
    const is = (name: string, kind: 'r' | 'w', peerPort?: number) => (e: Ev) =>
      e.pid === who[name] && e.kind === kind && (peerPort === undefined || peer(e) === peerPort);
    // Each request's milestones in order; `null` where the trace lost one (the request is skipped).
    const steps: [string, (e: Ev) => boolean][] = [
      ['client writes the request', is('client', 'w', gwPort)],
      ['gateway reads it', is('gateway', 'r', -gwPort)],
      ['gateway writes the admission to Redis', is('gateway', 'w', 6379)],
      ['Redis reads it', is('redis', 'r')],
      ['Redis answers', is('redis', 'w')],
      ['gateway reads the answer', is('gateway', 'r', 6379)],
      ['gateway publishes the request (NATS)', is('gateway', 'w', 4222)],
      ['chat-service reads it', is('chat', 'r', 4222)],
      ['chat-service writes to the upstream', is('chat', 'w', upPort)],
      ['upstream reads it', is('upstream', 'r', -upPort)],
      ['upstream answers', is('upstream', 'w', -upPort)],
      ['chat-service reads the answer', is('chat', 'r', upPort)],
      ['chat-service publishes the first frame', is('chat', 'w', 4222)],
      ['gateway reads it', is('gateway', 'r', 4222)],
      ['gateway writes the first bytes', is('gateway', 'w', -gwPort)],
      ['client reads them', is('client', 'r', gwPort)],
    ];
    const hops: number[][] = steps.slice(1).map(() => []);
    const totals: number[] = [];
    let traced = 0;
    for (let i = 0; i < evs.length; i++) {
      if (!steps[0]?.[1](evs[i] as Ev)) continue;
      const at: number[] = [(evs[i] as Ev).t];
      let j = i;
      for (const [, match] of steps.slice(1)) {
        while (++j < evs.length && !match(evs[j] as Ev));
        // The next request began first: this one's trace is incomplete.
        if (j >= evs.length || evs.slice(i + 1, j).some(steps[0][1])) break;
        at.push((evs[j] as Ev).t);
      }
      if (at.length !== steps.length) continue;
      traced++;
      for (let k = 1; k < at.length; k++) hops[k - 1]?.push((at[k] as number) - (at[k - 1] as number));
      totals.push((at.at(-1) as number) - (at[0] as number));
    }
    console.log(
      `\n${opt.streams} streams one at a time (model ${opt.model}) after ${opt.warmup} s of warm-up, ${traced} traced in full;` +
        ` the client measured a first byte of ${pct(measured, 50).toFixed(3)} ms p50 (perf recording)`,
    );
    console.table(
      steps.slice(1).map(([name], k) => ({
        'until ...': name,
        'p50 us': (pct(hops[k] ?? [], 50) * 1000).toFixed(0),
        'p90 us': (pct(hops[k] ?? [], 90) * 1000).toFixed(0),
      })),
    );
    console.log(
      `client write -> client read: ${(pct(totals, 50) * 1000).toFixed(0)} us p50, ${(pct(totals, 90) * 1000).toFixed(0)} us p90`,
    );
  } finally {
    await pool.close();
    await stack.close();
  }
}

await main();
