/**
 * Backing servers of a test's own, on free loopback ports, for tests that stop and restart them
 * (the fault suite). Each `stop()` kills the server (PostgreSQL: immediate shutdown, like a crash) and
 * `start()` brings it back on the same port with the same data, so clients reconnect by themselves.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../bench/support.js';

export interface PrivateServer {
  url: string;
  port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Stops it for good and removes its files. */
  destroy(): Promise<void>;
}

export async function waitForPort(port: number, up: boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await canConnect(port)) !== up) {
    if (Date.now() > deadline) throw new Error(`port ${port} did not go ${up ? 'up' : 'down'} in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
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

async function killed(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

/** A redis-server that keeps nothing on disk. */
export async function privateRedis(): Promise<PrivateServer> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const server: PrivateServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      child = spawn(
        'redis-server',
        ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
        {
          stdio: 'ignore',
        },
      );
      await waitForPort(port, true);
    },
    async stop() {
      await killed(child);
      child = null;
      await waitForPort(port, false);
    },
    destroy: () => server.stop(),
  };
  await server.start();
  return server;
}

/** A nats-server with JetStream, its store kept across stop/start. */
export async function privateNats(): Promise<PrivateServer> {
  const port = await freePort();
  const store = mkdtempSync(join(tmpdir(), 'infer-nats-'));
  const binary = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find(existsSync) ?? 'nats-server';
  let child: ChildProcess | null = null;
  const server: PrivateServer = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async start() {
      child = spawn(binary, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], {
        stdio: 'ignore',
      });
      await waitForPort(port, true);
    },
    async stop() {
      await killed(child);
      child = null;
      await waitForPort(port, false);
    },
    async destroy() {
      await server.stop();
      rmSync(store, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  if (!version) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql');
  return join(root, version, 'bin');
}

/**
 * A PostgreSQL cluster of its own (initdb into a temporary folder, trust auth). As root it runs as the
 * `postgres` user (PostgreSQL refuses root). stop() is an immediate shutdown, like a crash.
 */
export async function privatePostgres(): Promise<PrivateServer> {
  const port = await freePort();
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), 'infer-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { stdio: 'ignore' })
      : execFileSync(join(bin, cmd), args, { stdio: 'ignore' });
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const server: PrivateServer = {
    url: `postgresql://postgres@127.0.0.1:${port}`,
    port,
    async start() {
      run('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
      await waitForPort(port, true);
    },
    async stop() {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      await waitForPort(port, false);
    },
    async destroy() {
      try {
        await server.stop();
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
