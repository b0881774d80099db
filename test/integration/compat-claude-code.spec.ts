/**
 * Claude Code (`@anthropic-ai/claude-code`, version pinned in package.json) runs a scripted task through
 * the gateway end to end: `claude -p` with ANTHROPIC_BASE_URL at the gateway and ANTHROPIC_API_KEY a
 * gateway key, telemetry and non-essential traffic off, its own temporary HOME. It asks for its
 * default model (`claude-opus-5-5` in 2.1.x), which the test catalog maps by alias to a model served
 * by the scripted engine (test/support/scripted-upstream.ts, a test double): its first turn is a
 * `Write` tool call, Claude Code runs the tool (writes the file), sends the tool result back, and the
 * engine's second turn ends the task. The test checks the file on disk, what Claude Code sent, and
 * the usage ledger.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { lastToolOutput, type ScriptedUpstream, scriptedModel } from '../support/scripted-upstream.js';
import { waitFor } from '../support/wait-for.js';
import { runProcess as run, type ScriptedStack, startScriptedStack } from './agent-support.js';
import type { Stack } from './harness.js';

const CLAUDE = join(process.cwd(), 'node_modules', '.bin', 'claude');

describe('Claude Code (claude -p) through the gateway', () => {
  let up: ScriptedUpstream;
  let stack: Stack;
  let dir: string;
  let scripted: ScriptedStack;

  before(async () => {
    scripted = await startScriptedStack(
      'claude-code',
      (u) => [
        {
          ...scriptedModel(u, 'coder', 'coder', { context_window: 1_048_576 }),
          aliases: ['claude-opus-5-5', 'claude-sonnet-5-5'],
        },
        {
          ...scriptedModel(u, 'coder-small', 'small', { context_window: 1_048_576 }),
          rank: 20,
          aliases: ['claude-haiku-5-5'],
        },
      ],
      { ledger: true },
    );
    ({ up, stack, dir } = scripted);
  });
  after(async () => {
    await scripted?.close();
  });

  it('writes the file the engine asks for with its Write tool, and finishes', async () => {
    const work = join(dir, 'work');
    const home = join(dir, 'home');
    mkdirSync(work);
    mkdirSync(home);
    const target = join(work, 'hello.txt');
    up.script('coder', [
      {
        text: 'I will write the file.',
        tool_calls: [
          { name: 'Write', arguments: { file_path: target, content: 'written through the gateway\n' } },
        ],
      },
      (req) => ({ text: `Done. The tool said: ${lastToolOutput(req)}` }),
    ]);
    // Anything else Claude Code asks of its small model (a title, a summary) gets a short answer.
    up.script('small', [], { text: 'ok' });
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      ANTHROPIC_BASE_URL: stack.url,
      ANTHROPIC_API_KEY: stack.keys.inference,
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    };
    const r = await run(
      CLAUDE,
      [
        '-p',
        'Create hello.txt in the current directory.',
        '--allowedTools',
        'Write',
        '--output-format',
        'json',
      ],
      {
        cwd: work,
        env,
        timeoutMs: 120_000,
      },
    );
    assert.equal(r.code, 0, `claude exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.equal(readFileSync(target, 'utf8'), 'written through the gateway\n');
    const result = JSON.parse(r.stdout) as { is_error: boolean; result: string };
    assert.equal(result.is_error, false);
    assert.match(result.result, /^Done\. The tool said: /);
    // What Claude Code sent: its own tools, then the tool result of the Write call.
    const seen = up.requestsFor('coder');
    assert.equal(seen.length, 2, `requests to the coder script: ${seen.length}`);
    const offered = ((seen[0]?.body.tools ?? []) as Array<{ function: { name: string } }>).map(
      (t) => t.function.name,
    );
    assert.ok(offered.includes('Write') && offered.includes('Bash'), offered.join(','));
    const last = seen[1]?.body.messages?.filter((m) => m.role === 'tool') ?? [];
    assert.equal(last.length, 1);
    assert.equal(last[0]?.tool_call_id, 'call_coder_0_0');
    // Usage: one ledger row per request, under /v1/messages, on the model the alias names.
    const rows = await waitFor(
      'the ledger rows of the run',
      async () => {
        const rows = await stack.prisma.usageEvent.findMany({ where: { model: 'coder' } });
        return rows.length >= 2 ? rows : undefined;
      },
      { timeoutMs: 15_000, everyMs: 50 },
    );
    assert.equal(rows.length, 2);
    assert.ok(rows.every((row) => row.endpoint === '/v1/messages' && row.status === 200));
    assert.equal(new Set(rows.map((row) => row.requestId)).size, 2);
  });
});
