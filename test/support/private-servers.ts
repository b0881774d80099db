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
  /** The server's process id while it runs (benchmarks read its CPU time). */
  pid?(): number | undefined;
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
    pid: () => child?.pid,
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

export interface ClusterNode {
  port: number;
  /** Kills the node (SIGKILL, like a crash). */
  kill(): Promise<void>;
  alive(): boolean;
  pid(): number | undefined;
}

export interface PrivateRedisCluster {
  /** redis+cluster://127.0.0.1:p1,... (createRedisClient's form). */
  url: string;
  nodes: ClusterNode[];
  /** The node serving a hash slot as primary now (CLUSTER SHARDS via redis-cli on a live node). */
  primaryOf(slot: number): ClusterNode;
  /** The replicas of the primary on `port`. */
  replicasOf(port: number): ClusterNode[];
  /** Waits until every live node reports cluster_state:ok and every live replica is in sync. */
  settled(ms?: number): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * A Redis Cluster of Debian's redis-server: `primaries` primaries, each with `replicas` replicas, on free
 * loopback ports, created with `redis-cli --cluster create --cluster-yes`. Nothing is kept on disk but
 * the nodes files; node timeout 1 s (a killed primary's replica takes over in about 2 s) and
 * `cluster-require-full-coverage no` (a lost slot does not stop the others).
 */
export async function privateRedisCluster(primaries = 3, replicas = 1): Promise<PrivateRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'infer-rc-'));
  const count = primaries * (1 + replicas);
  const ports: number[] = [];
  const bus = new Map<number, number>();
  const taken = new Set<number>();
  const fresh = async () => {
    for (;;) {
      const p = await freePort();
      if (!taken.has(p)) {
        taken.add(p);
        return p;
      }
    }
  };
  while (ports.length < count) {
    const p = await fresh();
    ports.push(p);
    // The cluster bus on a port of its own (cluster-port), not the default port + 10000.
    bus.set(p, await fresh());
  }
  const children = new Map<number, ChildProcess | null>();
  const start = (port: number) => {
    const child = spawn(
      'redis-server',
      [
        '--bind',
        '127.0.0.1',
        '--port',
        String(port),
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(bus.get(port)),
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '1000',
        '--cluster-require-full-coverage',
        'no',
        '--cluster-replica-validity-factor',
        '0',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    children.set(port, child);
  };
  for (const p of ports) start(p);
  await Promise.all(ports.map((p) => waitForPort(p, true)));
  execFileSync(
    'redis-cli',
    [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ],
    { stdio: 'ignore', timeout: 30_000 },
  );
  const cli = (port: number, ...args: string[]) =>
    execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 5_000 });
  const nodes: ClusterNode[] = ports.map((port) => ({
    port,
    alive: () => {
      const c = children.get(port);
      return !!c && c.exitCode === null && c.signalCode === null;
    },
    async kill() {
      await killed(children.get(port) ?? null);
      children.set(port, null);
    },
    pid: () => children.get(port)?.pid,
  }));
  const byPort = (port: number) => nodes.find((n) => n.port === port)!;
  /** Lines of CLUSTER NODES from a live node: id, port, flags, primary id, slots. */
  const table = () => {
    const live = nodes.find((n) => n.alive());
    if (!live) throw new Error('no live cluster node');
    return cli(live.port, 'cluster', 'nodes')
      .trim()
      .split('\n')
      .map((line) => {
        const f = line.split(' ');
        return {
          id: f[0]!,
          port: Number(f[1]!.split('@')[0]!.split(':')[1]),
          flags: f[2]!.split(','),
          primary: f[3]!,
          slots: f.slice(8),
        };
      });
  };
  const cluster: PrivateRedisCluster = {
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    nodes,
    primaryOf(slot) {
      for (const row of table()) {
        if (!row.flags.includes('master') || row.flags.includes('fail')) continue;
        for (const s of row.slots) {
          const [a, b] = s.split('-').map(Number);
          if (slot >= a! && slot <= (b ?? a!)) return byPort(row.port);
        }
      }
      throw new Error(`no primary serves slot ${slot}`);
    },
    replicasOf(port) {
      const rows = table();
      const id = rows.find((r) => r.port === port)?.id;
      return rows.filter((r) => r.primary === id && byPort(r.port).alive()).map((r) => byPort(r.port));
    },
    async settled(ms = 20_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const live = nodes.filter((n) => n.alive());
        // Every node sees the cluster ok, and every replica is in sync with its primary.
        const ok = live.every((n) => {
          try {
            if (!/cluster_state:ok/.test(cli(n.port, 'cluster', 'info'))) return false;
            const repl = cli(n.port, 'info', 'replication');
            return !/role:slave/.test(repl) || /master_link_status:up/.test(repl);
          } catch {
            return false;
          }
        });
        if (ok) return;
        if (Date.now() > deadline) throw new Error(`the Redis Cluster did not settle in ${ms} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async destroy() {
      await Promise.all(nodes.map((n) => n.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.settled();
  return cluster;
}
