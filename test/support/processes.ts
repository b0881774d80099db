/**
 * Child processes for tests: one runner that collects a process's exit code and output, with a deadline,
 * and the admin CLI run from its TypeScript sources (the way `npm run admin --` runs it).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `cmd` to its end: killed with SIGKILL after `timeoutMs` (then `code` is null). */
export function runProcess(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; stdin?: string } = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd ?? ROOT,
      env: opts.env ?? process.env,
      stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => {
      stdout += d;
    });
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
  });
}

/**
 * Runs the admin CLI (`apps/admin-cli/src/main.ts`) with `env` laid over this process's environment;
 * DEBUG is cleared so that its output is only what the CLI prints.
 */
export function runAdminCli(
  args: string[],
  env: Record<string, string>,
  opts: { stdin?: string; timeoutMs?: number } = {},
): Promise<ProcessResult> {
  return runProcess(
    process.execPath,
    ['--conditions=source', '--import', './tools/ts-register.js', 'apps/admin-cli/src/main.ts', ...args],
    { env: { ...process.env, DEBUG: '', ...env }, ...opts },
  );
}
