// A CPU profile of the gateway (production build, limits on) under load, and its top functions.
//
//   node --conditions=source --import ./tools/ts-register.js bench/profile-gateway.ts
//   node ... bench/profile-gateway.ts --seconds 10 --connections 32 --model chat-up|chat-A [--no-build]
//        [--rate 3000] [--warmup 2]
//
// Starts the stack of bench/stack.ts (bench/stack/lib.ts) with the limits-on gateway under
// `node --cpu-prof`, drives POST /v1/chat/completions (model chat-up: through chat-service's openai
// engine to the fake upstream; chat-A: the simulator) with autocannon for `--seconds`, stops the stack
// (the gateway writes its .cpuprofile on exit, under var/profiles/) and prints the functions with the
// most self time, and the self time by area (our code by folder, packages, Node internals, GC).
// `--rate N`: autocannon at N req/s in all (its rate mode) instead of a closed loop, so that two models
// are profiled at the same load.
// Open the file in Chrome DevTools (Performance) or VS Code for the call tree.
//
// `--perf` records with Linux `perf` instead (the gateway with --perf-basic-prof-only-functions, so
// that JIT frames have names) and prints the CPU by binary (kernel, node, JIT code), by thread (main,
// V8 workers: GC and compilation) and the top frames by inclusive time. The V8 profiler samples the
// main thread only and charges time around native socket writes to `writeBuffer` / `writeUtf8String`
// far beyond what the write system calls cost (bench/results/data-path-issue-13.md, perf-cpu section); perf sees the
// kernel's share and the other threads as they are.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { buildProduction, startStack } from './stack/lib.js';

const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    model: { type: 'string', default: 'chat-up' },
    top: { type: 'string', default: '30' },
    'no-build': { type: 'boolean', default: false },
    perf: { type: 'boolean', default: false },
    rate: { type: 'string', default: '0' },
    /** Seconds of load before the profiled run (JIT compilation, pools, caches). */
    warmup: { type: 'string', default: '2' },
  },
});

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: our app/lib folder, an npm package, Node itself, or a VM pseudo-frame. */
function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const ours = /(apps|libs)\/([^/]+)\/dist\/([^/]+)/.exec(url);
  if (ours) return `${ours[1]}/${ours[2]}/${ours[3]!.replace(/\.js$/, '')}`;
  return url.split('/').slice(-2).join('/');
}

export function summarizeProfile(path: string, top: number): void {
  const prof = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  prof.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
  });
  const fns = new Map<string, number>();
  const areas = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    total += us;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    const name = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/(node_modules|apps|libs)\//, '$1/')}:${lineNumber + 1}` : ''}`;
    fns.set(name, (fns.get(name) ?? 0) + us);
    const a = area(url, functionName);
    areas.set(a, (areas.get(a) ?? 0) + us);
  }
  const busy = total - idle;
  console.log(`profile ${path}: ${(total / 1e6).toFixed(1)} s sampled, busy ${(busy / 1e6).toFixed(2)} s`);
  const table = (m: Map<string, number>, label: string) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => ({
        [label]: k.slice(0, 110),
        'self ms': (us / 1000).toFixed(0),
        '% busy': ((us / busy) * 100).toFixed(1),
      }));
  console.log('\nSelf time by area:');
  console.table(table(areas, 'area'));
  console.log('\nTop functions by self time:');
  console.table(table(fns, 'function'));
}

async function main(): Promise<void> {
  if (!opt['no-build']) buildProduction();
  const dir = resolve('var/profiles');
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const perfData = join(dir, `perf-${started}.data`);
  const stack = await startStack({
    gatewayOnNodeArgs: opt.perf
      ? ['--perf-basic-prof-only-functions', '--interpreted-frames-native-stack']
      : ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    withGatewayOff: false,
  });
  let requests = 0;
  try {
    const run = (seconds: number) =>
      autocannon({
        url: `${stack.gatewayOn.url}/v1/chat/completions`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.key}` },
        body: JSON.stringify({
          model: opt.model,
          messages: [{ role: 'user', content: 'Hello there' }],
          max_tokens: 1,
        }),
        connections: Number(opt.connections),
        duration: seconds,
        ...(Number(opt.rate) > 0 ? { overallRate: Number(opt.rate) } : {}),
      });
    await run(Number(opt.warmup)); // warm-up (the V8 profile has start-up in it anyway; perf records after it)
    // perf records the gateway for the measured run (a second less, so that it ends inside it).
    const recording = opt.perf
      ? new Promise((r) =>
          spawn(
            'perf',
            [
              'record',
              ...['-F', '999', '-g', '-o', perfData, '-p', String(stack.gatewayOn.pid)],
              ...['--', 'sleep', String(Math.max(1, Number(opt.seconds) - 1))],
            ],
            { stdio: 'ignore' },
          ).once('exit', r),
        )
      : null;
    const r = await run(Number(opt.seconds));
    await recording;
    requests = r['2xx'];
    console.log(
      `${requests} requests answered 200 (${r.non2xx} non-2xx) in ${r.duration.toFixed(1)} s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms`,
    );
  } finally {
    await stack.close();
  }
  if (opt.perf) {
    summarizePerf(perfData, Number(opt.top));
    return;
  }
  const newest = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).mtimeMs >= started)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (!newest) throw new Error(`no .cpuprofile written under ${dir}`);
  summarizeProfile(newest, Number(opt.top));
}

/** What `perf report` says about a recording: by binary, by thread, top frames by inclusive time. */
function summarizePerf(data: string, top: number): void {
  const report = (...args: string[]) =>
    execFileSync('perf', ['report', '-i', data, '--stdio', ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 256 * 1024 * 1024,
    })
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'));
  console.log(`perf recording ${data}`);
  console.log('\nCPU by binary ([kernel.kallsyms]: system calls, TCP, scheduling; [JIT]: compiled JS):');
  console.log(report('--no-children', '-g', 'none', '--sort=dso').slice(0, 8).join('\n'));
  console.log('\nCPU by thread (node-V8Worker: parallel GC and optimizing compilation):');
  console.log(report('--no-children', '-g', 'none', '--sort=comm').slice(0, 6).join('\n'));
  console.log('\nSystem calls and JS frames by inclusive time:');
  console.log(
    report('--children', '-g', 'none', '--sort=sym')
      .filter((l) => /JS:|ksys_|__x64_sys_|GarbageCollect|Scaveng|Compil/.test(l))
      .slice(0, top)
      .map((l) => l.slice(0, 160))
      .join('\n'),
  );
}

if (process.argv[1]?.endsWith('profile-gateway.ts')) await main();
