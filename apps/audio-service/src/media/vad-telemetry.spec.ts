// onnxruntime's telemetry stays off: voice detection run in a process of its own (HOME in a temporary
// folder, HTTP(S)_PROXY at a recording proxy) leaves no telemetry store and attempts no connection.
// The control run with ORT_DISABLE_TELEMETRY=0 shows the check can see the telemetry when it is on.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { recordingProxy } from '../../../../test/support/recording-proxy.js';

const REPO = resolve(import.meta.dirname, '../../../..');
const STORE = ['.cache', 'Microsoft', 'DeveloperTools', '.onnxruntime'];

/** Runs voice detection on one second of silence in a child process; resolves with its exit code. */
function detect(home: string, env: Record<string, string>): Promise<number | null> {
  const code = `import { speechProbabilities } from './apps/audio-service/src/media/vad.ts';
    const p = await speechProbabilities(new Float32Array(16000));
    if (!(p.length > 0)) process.exit(3);`;
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      ['--conditions=source', '--import', './tools/ts-register.js', '--input-type=module', '-e', code],
      { cwd: REPO, env: { ...process.env, HOME: home, ...env }, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    child.on('close', done);
  });
}

describe('onnxruntime telemetry (voice detection)', () => {
  const homes: string[] = [];
  after(() => {
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });
  const home = () => {
    const h = mkdtempSync(join(tmpdir(), 'ort-home-'));
    homes.push(h);
    return h;
  };

  it('is off: no telemetry store, no connection attempt through the proxy', async () => {
    const proxy = await recordingProxy();
    try {
      const h = home();
      // Unset in the child, whatever this process has: the default must be off. CI is cleared too, since
      // onnxruntime keeps its telemetry off under CI by itself, which would hide a regression there.
      const env = { ...proxy.env, NO_PROXY: '', no_proxy: '', ORT_DISABLE_TELEMETRY: '', CI: '' };
      assert.equal(await detect(h, env), 0);
      assert.equal(existsSync(join(h, ...STORE)), false, 'onnxruntime wrote its telemetry store');
      assert.deepEqual(proxy.attempts, []);
    } finally {
      await proxy.close();
    }
  });

  it('control: with ORT_DISABLE_TELEMETRY=0 the same run writes the telemetry store', async () => {
    const h = home();
    assert.equal(await detect(h, { ORT_DISABLE_TELEMETRY: '0', CI: '' }), 0);
    assert.equal(existsSync(join(h, ...STORE)), true);
  });
});
