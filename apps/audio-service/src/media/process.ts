import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';

export interface RunResult {
  code: number | null;
  stdout: Buffer;
  /** The last 16 KB of stderr, for messages. */
  stderr: string;
}

export class ToolMissingError extends Error {
  constructor(readonly tool: string) {
    super(`${tool} is not installed or not on PATH`);
    this.name = 'ToolMissingError';
  }
}

const STDERR_KEEP = 16 * 1024;

/**
 * Runs a program to its end and collects its output. Arguments go as an array (no shell). When
 * `signal` aborts, the process is killed at once (SIGKILL) and the promise rejects with the abort
 * reason; a missing binary rejects with ToolMissingError.
 */
export function run(
  cmd: string,
  args: readonly string[],
  opts: { signal?: AbortSignal; stdin?: Buffer; maxStdout?: number } = {},
): Promise<RunResult> {
  const { signal } = opts;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const onAbort = () => {
      child.kill('SIGKILL');
      finish(() => reject(signal?.reason));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout?.on('data', (d: Buffer) => {
      outBytes += d.length;
      if (opts.maxStdout && outBytes > opts.maxStdout) {
        child.kill('SIGKILL');
        finish(() => reject(new Error(`${cmd} wrote more than ${opts.maxStdout} bytes`)));
        return;
      }
      out.push(d);
    });
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      if (err.length > 2 * STDERR_KEEP) err = err.slice(-STDERR_KEEP);
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      finish(() => reject(e.code === 'ENOENT' ? new ToolMissingError(cmd) : e));
    });
    child.on('close', (code) => {
      finish(() => resolve({ code, stdout: Buffer.concat(out), stderr: err.slice(-STDERR_KEEP) }));
    });
    if (opts.stdin && child.stdin) {
      child.stdin.on('error', () => undefined); // EPIPE when the program exits early: its exit code says why
      child.stdin.end(opts.stdin);
    }
  });
}

/** A private scratch folder, removed with everything in it when `fn` settles. */
export async function withTempDir<T>(base: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(base, 'infer-audio-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
