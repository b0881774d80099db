import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../bench/support.js';

export interface PrivateNats {
  url: string;
  stop(): Promise<void>;
}

const BINARY = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) =>
  existsSync(p),
);

/**
 * Starts a nats-server with JetStream of the test's own on a loopback port (a free one unless given,
 * e.g. to restart a killed server where its clients reconnect); stop() kills it.
 */
export async function startPrivateNats(atPort?: number): Promise<PrivateNats> {
  if (!BINARY) throw new Error('nats-server is not installed (scripts/services.sh installs it)');
  const port = atPort ?? (await freePort());
  const store = await mkdtemp(join(tmpdir(), 'infer-nats-'));
  const child = spawn(BINARY, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], {
    stdio: 'ignore',
  });
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`nats-server did not start on port ${port}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(store, { recursive: true, force: true });
    },
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
