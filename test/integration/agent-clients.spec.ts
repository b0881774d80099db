/**
 * Real agent clients against the real stack, on the scripted engine (test/support/scripted-upstream.ts,
 * a test double) so that the model's side of the loop is known:
 * - Codex CLI (`codex exec`, pinned in package.json) with a provider whose base_url is the gateway
 *   (wire_api "responses"): the engine tells it to run a shell command, Codex runs it and sends the
 *   output back, the engine answers done; the test checks the file Codex made. Codex reaches no other
 *   host (a closed proxy for everything but loopback, update checks and analytics off).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  lastToolOutput,
  type ScriptedRequest,
  type ScriptedUpstream,
  scriptedModel,
  startScriptedUpstream,
} from '../support/scripted-upstream.js';
import { type Stack, startStack } from './harness.js';

const require = createRequire(import.meta.url);

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The shell tool Codex offered (its name as the model sees it) and arguments that run `command`. */
function shellCall(
  req: ScriptedRequest,
  command: string,
): { name: string; arguments: Record<string, unknown> } {
  const tools = (req.body.tools ?? []) as Array<{
    function: { name: string; parameters?: { properties?: Record<string, unknown> } };
  }>;
  const names = tools.map((t) => t.function.name);
  const exec = tools.find((t) => /(^|__)exec_command$/.test(t.function.name));
  if (exec) return { name: exec.function.name, arguments: { cmd: command } };
  const shell = tools.find((t) => /(^|__)(shell|shell_command|local_shell)$/.test(t.function.name));
  if (!shell) throw new Error(`Codex offered no shell tool: ${names.join(', ')}`);
  const props = shell.function.parameters?.properties ?? {};
  return {
    name: shell.function.name,
    arguments:
      Array.isArray((props.command as { type?: string })?.type) ||
      (props.command as { type?: string })?.type === 'array'
        ? { command: ['bash', '-lc', command] }
        : { command },
  };
}

describe('agent clients through the gateway (scripted engine)', () => {
  let up: ScriptedUpstream;
  let stack: Stack;
  let dir: string;

  before(async () => {
    up = await startScriptedUpstream();
    dir = mkdtempSync(join(tmpdir(), 'agent-clients-'));
    const catalogFile = join(dir, 'models.json');
    writeFileSync(
      catalogFile,
      JSON.stringify({ models: [scriptedModel(up, 'codex-model', 'codex', { reasoning: 'default_on' })] }),
    );
    stack = await startStack({ catalogFile, env: { ALLOW_INSECURE_HTTP: '1' } });
  });
  after(async () => {
    await stack?.close();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('Codex CLI runs a scripted task to the end: tool call, output sent back, final answer', async () => {
    const home = join(dir, 'codex-home');
    const work = join(dir, 'work');
    mkdirSync(home, { recursive: true });
    mkdirSync(work, { recursive: true });
    writeFileSync(
      join(home, 'config.toml'),
      [
        'model = "codex-model"',
        'model_provider = "infer"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        'check_for_update_on_startup = false',
        'web_search = "disabled"',
        '',
        '[analytics]',
        'enabled = false',
        '',
        '[model_providers.infer]',
        'name = "infer"',
        `base_url = "${stack.baseURL}"`,
        'env_key = "INFER_API_KEY"',
        'wire_api = "responses"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
      ].join('\n'),
    );
    up.script('codex', [
      (req) => ({ reasoning: 'I will write the file.', tool_calls: [shellCall(req, 'echo hi > out.txt')] }),
      (req) => ({ text: `done (${(lastToolOutput(req) ?? '').length} characters of output)` }),
    ]);
    const bin = join(dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      CODEX_HOME: home,
      INFER_API_KEY: stack.keys.inference,
      // Anything but loopback goes to a closed port: Codex reaches no other host.
      HTTPS_PROXY: 'http://127.0.0.1:9',
      HTTP_PROXY: 'http://127.0.0.1:9',
      ALL_PROXY: 'http://127.0.0.1:9',
      NO_PROXY: '127.0.0.1,localhost',
      RUST_LOG: 'error',
    };
    const r = await run(
      process.execPath,
      [bin, 'exec', '--skip-git-repo-check', '--color', 'never', 'Write hi into out.txt'],
      { cwd: work, env, timeoutMs: 120_000 },
    );
    const seen = up.requestsFor('codex');
    const detail = () =>
      `exit ${r.code}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-3000)}\ntools: ${JSON.stringify(
        ((seen[0]?.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name),
      )}`;
    assert.equal(r.code, 0, detail());
    assert.ok(existsSync(join(work, 'out.txt')), detail());
    assert.equal(readFileSync(join(work, 'out.txt'), 'utf8').trim(), 'hi');
    assert.equal(seen.length, 2, detail());
    // The second turn carries the tool output Codex sent back, and the first turn's reasoning.
    const second = seen[1]?.body.messages ?? [];
    assert.ok(
      second.some((m) => m.role === 'tool'),
      detail(),
    );
    assert.match(r.stdout + r.stderr, /done \(/);
  });
});
