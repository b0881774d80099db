// The images themselves, built and run by a real container engine (Debian's podman, rootful, with the
// settings of docker/engine/): the base made locally (docker/engine/base-image.sh, cached), every app's
// image built from its Dockerfile (two at a time; the shared layers once), then per image: its size over
// the base within budget, its source revision label, its CycloneDX SBOM, and run as operators run it
// (read-only root, /tmp a tmpfs, no capabilities): uid 1000, no capability, / not writable, /tmp writable;
// every service against this test's own PostgreSQL, Redis and NATS (test/support/private-servers.ts) gets
// ready (its default models loaded) and exits 0 within 10 s of SIGTERM. Then docker/compose.yaml's app
// services run under podman-compose against the same servers (host network: those servers listen on
// loopback only), and one request of every capability goes through the containerised gateway with the
// `openai` SDK (capabilities.ts, shared with kube-play.spec.ts).
// Skipped, with one line saying why, where no container engine can run (no podman, not root).
// Every step has a deadline; the printed `image-size` lines are what docs/deployment.md quotes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml, stringify } from 'yaml';
import {
  type PrivateServer,
  privateNats,
  privatePostgres,
  privateRedis,
} from '../support/private-servers.js';
import { waitFor } from '../support/wait-for.js';
import { demoKey, everyCapability } from './capabilities.js';
import {
  APPS,
  BASE,
  buildAll,
  ENGINE_ENV,
  image,
  podman,
  revision,
  run,
  skipReason,
  TAG,
} from './engine-support.js';
import { REPO } from './k8s-support.js';

/** MB over the base image: every service image, and the audio image with its media tools. */
const BUDGET_MB: Record<string, number> = { 'audio-service': 450 };
const DEFAULT_BUDGET_MB = 250;

async function sizeOf(ref: string): Promise<number> {
  return Number((await podman(['image', 'inspect', '--format', '{{.Size}}', ref])).trim());
}

const skip = skipReason();
if (skip) console.log(`# container tests skipped: ${skip}`);

/**
 * Why the compose run cannot be done with this podman-compose, or false. The test's servers listen on
 * loopback only, so the compose services run with `network_mode: host`; podman-compose 1.0.3 (Debian
 * 12's own) adds the project's default network to such a service too, which podman refuses ("cannot set
 * multiple networks without bridge network mode"). scripts/test.sh installs 1.0.6 from bookworm-backports.
 */
function composeSkipReason(): string | false {
  if (skip) return false;
  try {
    const out = execFileSync('podman-compose', ['version'], {
      encoding: 'utf8',
      env: ENGINE_ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const v = /podman-composer? version\s+(\d+)\.(\d+)\.(\d+)/.exec(out);
    if (v && Number(v[1]) * 1e6 + Number(v[2]) * 1e3 + Number(v[3]) < 1_000_006)
      return `podman-compose ${v[1]}.${v[2]}.${v[3]} cannot run network_mode: host services (it adds the default network too); 1.0.6 can`;
  } catch {
    return 'podman-compose version failed';
  }
  return false;
}
const composeSkip = composeSkipReason();
if (composeSkip) console.log(`# compose run skipped: ${composeSkip}`);

describe('container images, built and run by podman', { skip, timeout: 80 * 60_000 }, () => {
  let pg: PrivateServer;
  let redis: PrivateServer;
  let nats: PrivateServer;
  const serverEnv = () => [
    '-e',
    `DATABASE_URL=${pg.url}/postgres`,
    '-e',
    `REDIS_URL=${redis.url}`,
    '-e',
    `NATS_URL=${nats.url}`,
  ];
  before(
    async () => {
      [pg, redis, nats] = await Promise.all([privatePostgres(), privateRedis(), privateNats()]);
      await buildAll();
    },
    { timeout: 70 * 60_000 },
  );
  after(async () => {
    await Promise.all([pg?.destroy(), redis?.destroy(), nats?.destroy()]);
  });

  it('every image is within its size budget over the base, labelled with its revision, with its SBOM', async () => {
    const base = await sizeOf(BASE);
    console.log(`# image-size base ${(base / 1e6).toFixed(0)} MB (${BASE})`);
    const over: string[] = [];
    for (const app of APPS) {
      const mb = ((await sizeOf(image(app))) - base) / 1e6;
      const budget = BUDGET_MB[app] ?? DEFAULT_BUDGET_MB;
      console.log(`# image-size ${app} ${mb.toFixed(0)} MB over the base (budget ${budget} MB)`);
      if (mb > budget) over.push(`${app}: ${mb.toFixed(0)} MB over the base, budget ${budget} MB`);
    }
    assert.deepEqual(over, []);
    for (const app of APPS) {
      const labels = JSON.parse(
        await podman(['image', 'inspect', '--format', '{{json .Labels}}', image(app)]),
      ) as Record<string, string>;
      assert.equal(labels['org.opencontainers.image.revision'], revision(), app);
      const sbom = JSON.parse(
        await podman(['run', '--rm', '--entrypoint', 'cat', image(app), '/app/sbom.cdx.json']),
      ) as { bomFormat: string; components: { name: string }[] };
      assert.equal(sbom.bomFormat, 'CycloneDX', app);
      assert.ok(sbom.components.length > 10, `${app}: ${sbom.components.length} components`);
    }
  });

  it('runs read-only, as uid 1000, without capabilities; / is not writable, /tmp is', async () => {
    const probe = [
      "const fs = require('node:fs');",
      "const cap = /CapEff:\\s*(\\w+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1];",
      "let root = 'writable'; try { fs.writeFileSync('/app/x', '1'); } catch (e) { root = e.code; }",
      "fs.writeFileSync('/tmp/x', '1');",
      'console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), cap, root }));',
    ].join(' ');
    for (const app of APPS) {
      const out = await podman([
        'run',
        '--rm',
        '--read-only',
        '--tmpfs',
        '/tmp',
        '--cap-drop=all',
        '--security-opt',
        'no-new-privileges',
        '--entrypoint',
        'node',
        image(app),
        '-e',
        probe,
      ]);
      assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), {
        uid: 1000,
        gid: 1000,
        cap: '0000000000000000',
        root: 'EROFS',
      });
    }
  });

  it('every service gets ready (its default models loaded) and exits 0 within 10 s of SIGTERM', async () => {
    const services = APPS.filter((a) => a !== 'admin-cli' && a !== 'gateway');
    await run(
      'podman',
      [
        'run',
        '--rm',
        '--network=host',
        ...serverEnv(),
        '--entrypoint',
        '/bin/sh',
        image('admin-cli'),
        '-c',
        'node apps/admin-cli/dist/main.js db migrate && node apps/admin-cli/dist/main.js catalog sync',
      ],
      5 * 60_000,
    );
    let port = 19_600 + Math.floor(Math.random() * 200);
    for (const app of services) {
      const name = `infer-test-${app}-${process.pid}`;
      const ops = port++;
      await podman([
        'run',
        '-d',
        '--name',
        name,
        '--network=host',
        '--read-only',
        '--tmpfs',
        '/tmp',
        '--cap-drop=all',
        ...serverEnv(),
        '-e',
        `OPS_PORT=${ops}`,
        '-e',
        `AUDIO_METRICS_PORT=${port++}`,
        image(app),
      ]);
      try {
        await waitFor(
          `${app} ready`,
          async () => (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => null))?.ok,
          {
            timeoutMs: 300_000,
            everyMs: 500,
          },
        );
        // The image's HEALTHCHECK as podman runs it (no systemd here to run it on a timer).
        await podman(['healthcheck', 'run', name]);
        const t = Date.now();
        await podman(['kill', '--signal', 'TERM', name]);
        const code = (await podman(['wait', name], 120_000)).trim();
        assert.equal(code, '0', `${app} exit status after SIGTERM`);
        // When the process ended (conmon's record), not when podman's bookkeeping caught up: podman 4.3
        // here takes up to 20 s more to store a container's exit.
        const ended = Number(
          (await podman(['inspect', '--format', '{{.State.FinishedAt.UnixMilli}}', name])).trim(),
        );
        assert.ok(ended - t < 10_000, `${app} took ${ended - t} ms to stop`);
      } finally {
        await podman(['rm', '-f', name]).catch(() => undefined);
      }
    }
  });

  it("docker/compose.yaml's apps under podman-compose: every capability answers through the containerised gateway", {
    skip: composeSkip,
  }, async () => {
    // The compose file's app services as they are, on the host network against this test's servers
    // (PostgreSQL, Redis and NATS of the file itself are the ones replaced), each with ports of its own.
    const compose = parseYaml(readFileSync(join(REPO, 'docker/compose.yaml'), 'utf8'), { merge: true });
    const dir = mkdtempSync(join(tmpdir(), 'compose-'));
    const project = `infertest${process.pid}`;
    const gatewayPort = 19_800 + Math.floor(Math.random() * 150);
    let ops = gatewayPort + 1;
    let metricsPort = 0;
    const services: Record<string, Record<string, unknown>> = {};
    for (const [name, s] of Object.entries(compose.services as Record<string, Record<string, unknown>>)) {
      if (!String(s.image ?? '').startsWith('infer/')) continue;
      const env = { ...(s.environment as Record<string, string>) };
      Object.assign(env, {
        DATABASE_URL: `${pg.url}/postgres`,
        REDIS_URL: redis.url,
        NATS_URL: nats.url,
        OPS_PORT: String(ops++),
        AUDIO_METRICS_PORT: String(ops++),
      });
      if (name === 'gateway') {
        delete env.TLS_CERT_FILE;
        delete env.TLS_KEY_FILE;
        Object.assign(env, {
          PORT: String(gatewayPort),
          HOST: '127.0.0.1',
          ALLOW_INSECURE_HTTP: '1',
          METRICS_PORT: String(ops),
        });
        metricsPort = ops++;
      }
      const { build: _b, depends_on: _d, ports: _p, ...rest } = s;
      services[name] = {
        ...rest,
        image: `${String(s.image).split(':')[0]}:${TAG}`,
        environment: env,
        network_mode: 'host',
        volumes: ((s.volumes as string[] | undefined) ?? []).filter((v) => !v.includes('.certs')),
      };
    }
    const file = join(dir, 'compose.yaml');
    // YAML 1.1 output: podman-compose's PyYAML reads a bare `no` (restart) as false.
    writeFileSync(file, stringify({ services, volumes: compose.volumes }, { version: '1.1' }));
    const composeCmd = (args: string[], ms: number) =>
      run('podman-compose', ['-p', project, '-f', file, ...args], ms);
    try {
      await composeCmd(['up', '-d'], 5 * 60_000);
      const baseURL = `http://127.0.0.1:${gatewayPort}/v1`;
      await waitFor(
        'the gateway ready',
        async () => (await fetch(`http://127.0.0.1:${gatewayPort}/readyz`).catch(() => null))?.ok,
        { timeoutMs: 300_000, everyMs: 1000 },
      );
      const key = await demoKey(`${pg.url}/postgres`);
      // Prometheus's /metrics on the internal port only, never on the public one.
      assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${gatewayPort}/metrics`)).status, 404);
      await everyCapability(baseURL, key);
    } finally {
      await composeCmd(['down'], 3 * 60_000).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
