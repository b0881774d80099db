import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runProcess } from '../../../test/support/processes.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A Lua command defined while an auto-pipeline waits for its tick, then called (what BullMQ does on the
 * connection it is given): on an auto-pipelined client ioredis throws an uncaught TypeError from its reply
 * loop, which ends the process (redis/ioredis#1931); on the connection withoutAutoPipelining() makes, the
 * command runs. Each case runs in a child process, so the crash it shows cannot take the test runner down.
 */
const CHILD = `
import { createRedisClient, withoutAutoPipelining } from '@infer/rpc';
const [url, mode] = process.argv.slice(1);
process.on('uncaughtException', (e) => { console.log(JSON.stringify({ crashed: e.message })); process.exit(0); });
const shared = createRedisClient(url, { enableAutoPipelining: true });
const client = mode === 'duplicate' ? withoutAutoPipelining(shared) : shared;
await client.ping();
const waiting = client.get('redis-pipelining-spec:probe'); // an auto-pipeline waits for its tick
client.defineCommand('specOne', { numberOfKeys: 0, lua: 'return 1' });
const ran = await client.specOne().then((v) => v, (e) => 'refused: ' + e.message);
await waiting;
await new Promise((r) => setImmediate(r));
console.log(JSON.stringify({ ran }));
shared.disconnect();
client.disconnect();
`;

async function runChild(mode: 'shared' | 'duplicate'): Promise<Record<string, unknown>> {
  const r = await runProcess(
    process.execPath,
    [
      '--conditions=source',
      '--import',
      './tools/ts-register.js',
      '--input-type=module',
      '-e',
      CHILD,
      REDIS_URL,
      mode,
    ],
    { timeoutMs: 60_000 },
  );
  const last = r.stdout.trim().split('\n').pop();
  assert.ok(last, `no answer from the child (exit ${r.code}): ${r.stderr}`);
  return JSON.parse(last);
}

describe('withoutAutoPipelining', () => {
  it('the hazard: a command defined while an auto-pipeline waits crashes an auto-pipelined client', async () => {
    const r = await runChild('shared');
    assert.match(String(r.crashed), /not iterable/);
  });

  it('its connection runs the command defined at that moment, and nothing is thrown', async () => {
    assert.deepEqual(await runChild('duplicate'), { ran: 1 });
  });
});
