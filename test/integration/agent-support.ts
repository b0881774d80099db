/**
 * The set-up shared by the agent and SDK specs on the scripted engine (test/support/scripted-upstream.ts,
 * a test double): a scripted upstream, a temporary folder holding the catalog of the models it serves,
 * the real stack on that catalog (optionally a ledger writer), and one close() for all of it. Also
 * runProcess(), to run an agent CLI (Codex, Claude Code) with a deadline and collect its output.
 *
 *   const s = await startScriptedStack('claude-code', (up) => [scriptedModel(up, 'coder', 'coder')], {
 *     ledger: true,
 *   });
 *   s.up.script('coder', [...]);
 *   ...
 *   await s.close();
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../support/scripted-upstream.js';
import { type Stack, type StackOptions, startStack, startStackLedger } from './harness.js';

export interface ScriptedStack {
  up: ScriptedUpstream;
  stack: Stack;
  /** The temporary folder (the catalog file is in it); removed by close(). */
  dir: string;
  /** The ledger writer, when asked for. */
  ledger: LedgerWriter | null;
  close(): Promise<void>;
}

/**
 * Starts a scripted upstream and the stack on a catalog of `models(up)` (entries made with
 * scriptedModel()); `stack` adds to the stack's options, `ledger` starts a ledger writer on it.
 * What was started before a failure is stopped again.
 */
export async function startScriptedStack(
  name: string,
  models: (up: ScriptedUpstream) => Array<Record<string, unknown>>,
  opts: { stack?: Omit<StackOptions, 'catalogFile'>; ledger?: boolean } = {},
): Promise<ScriptedStack> {
  const up = await startScriptedUpstream();
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  let stack: Stack | null = null;
  let ledger: LedgerWriter | null = null;
  const close = async () => {
    await ledger?.stop();
    await stack?.close();
    await up.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const catalogFile = join(dir, 'models.json');
    writeFileSync(catalogFile, JSON.stringify({ models: models(up) }));
    stack = await startStack({ ...opts.stack, catalogFile });
    if (opts.ledger) ledger = await startStackLedger(stack);
    return { up, stack, dir, ledger, close };
  } catch (e) {
    await close().catch(() => undefined);
    throw e;
  }
}

export { runProcess } from '../support/processes.js';
