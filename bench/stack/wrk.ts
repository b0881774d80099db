/**
 * wrk (https://github.com/wg/wrk, `apt-get install wrk`) as bench/stack.ts's closed-loop load generator:
 * a C program with one event loop per thread, far cheaper per request than autocannon (which runs in the
 * bench's own Node process), so more of the two cores is left to the stack being measured. Closed loop
 * only (wrk has no fixed-rate mode): the fixed-rate runs stay on autocannon, and autocannon is the
 * fallback when wrk is not installed.
 *
 * wrk's CPU time is read from the shell that waits for it (cutime + cstime of /proc/<sh>/stat after
 * wrk exits), so the load generator's CPU per request is known for wrk as for autocannon.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLK_TCK = 100;

export interface WrkResult {
  responses: number;
  durationS: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** wrk's own CPU time (user + system), ms. */
  cpuMs: number;
}

/** Whether a `wrk` binary is on the PATH. */
export function hasWrk(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (e) {
    // wrk --version prints its banner and exits 1; only a missing binary is ENOENT.
    return (e as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** wrk's latency figures ("812.00us", "1.23ms", "2.00s") in ms. */
function ms(v: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return Number.NaN;
  const x = Number(m[1]);
  return m[2] === 'us' ? x / 1000 : m[2] === 'ms' ? x : m[2] === 's' ? x * 1000 : x * 60_000;
}

/** One closed-loop run (POST by default) of `seconds` with `connections` keep-alive connections, one wrk thread. */
export async function runWrk(opts: {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  seconds: number;
  timeoutS?: number;
  /** Default POST (with `body`). */
  method?: 'GET' | 'POST';
}): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'stack-wrk-'));
  const script = join(dir, 'post.lua');
  const lua = [
    `wrk.method = "${opts.method ?? 'POST'}"`,
    ...(opts.method === 'GET' ? [] : [`wrk.body = [==[${opts.body}]==]`]),
    ...Object.entries(opts.headers).map(
      ([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`,
    ),
  ].join('\n');
  writeFileSync(script, lua);
  try {
    const args = [
      '-t1',
      `-c${opts.connections}`,
      `-d${opts.seconds}s`,
      `--timeout`,
      `${opts.timeoutS ?? 30}s`,
      '--latency',
      '-s',
      script,
      opts.url,
    ];
    // The shell waits for wrk, then prints its own stat line: cutime/cstime are wrk's CPU time.
    const child = spawn('sh', ['-c', 'wrk "$@"; echo "@@stat $(cat /proc/$$/stat)"', 'sh', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    const stat = /@@stat (.*)/.exec(out)?.[1];
    const requests = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(out);
    if (code !== 0 || !stat || !requests) throw new Error(`wrk failed (exit ${code}):\n${out}`);
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: cutime is field 16 and cstime 17 (1-based in proc(5)) -> 13, 14 here.
    const cpuMs = ((Number(fields[13]) + Number(fields[14])) * 1000) / CLK_TCK;
    const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
    return {
      responses: Number(requests[1]),
      durationS: ms(`${requests[2]}${requests[3]}`) / 1000,
      p50: ms(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
      p99: ms(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
      non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
      errors: sockErr ? sockErr.slice(1).reduce((s, x) => s + Number(x), 0) : 0,
      cpuMs,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
