// The container engine for the deploy tests that run images (containers.spec.ts, kube-play.spec.ts):
// Debian's podman, rootful, with docker/engine/'s settings; the images built once per run and cached in
// podman's storage (the shared layers and the npm cache survive between runs).
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './k8s-support.js';

export const ENGINE_ENV = {
  ...process.env,
  CONTAINERS_CONF: join(REPO, 'docker/engine/containers.conf'),
};
export const APPS = readdirSync(join(REPO, 'apps')).filter(
  (a) => a !== 'console' && existsSync(join(REPO, 'docker', `${a}.Dockerfile`)),
);
export const BASE = 'docker.io/library/node:26-bookworm-slim';
export const TAG = 'test';

/**
 * Why the container tests cannot run here, or false. They run by default wherever a container engine
 * can (scripts/test.sh installs Debian's podman, buildah, debootstrap and podman-compose when it can);
 * INFER_SKIP_CONTAINERS=1 leaves them out on purpose (e.g. a quick local run of the whole suite).
 */
export function skipReason(): string | false {
  if (process.env.INFER_SKIP_CONTAINERS) return 'INFER_SKIP_CONTAINERS is set';
  if (process.getuid?.() !== 0) return 'not root: the container tests use rootful podman';
  for (const tool of ['podman', 'podman-compose'])
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore', env: ENGINE_ENV });
    } catch {
      return `no ${tool} on this machine (scripts/test.sh installs it where apt-get can)`;
    }
  try {
    // The engine itself works here (storage, runtime and cgroup settings of docker/engine/).
    execFileSync('podman', ['info'], { stdio: 'ignore', env: ENGINE_ENV, timeout: 60_000 });
  } catch {
    return 'podman cannot run here (`podman info` fails with the settings of docker/engine/)';
  }
  try {
    execFileSync('podman', ['image', 'exists', BASE], { stdio: 'ignore', env: ENGINE_ENV });
  } catch {
    try {
      execFileSync('debootstrap', ['--version'], { stdio: 'ignore' });
    } catch {
      return 'no base image and no debootstrap to make it (docker/engine/base-image.sh)';
    }
  }
  // A container can start here. Inside another (unprivileged) container podman answers `info` but runc
  // cannot mount /proc, so every build's RUN step would fail: one `true` in the base tells. The base is
  // made first (cached); when that fails the tests run and show why.
  try {
    const t0 = Date.now();
    execFileSync('bash', ['docker/engine/base-image.sh'], {
      cwd: REPO,
      stdio: 'ignore',
      env: ENGINE_ENV,
      timeout: 30 * 60_000,
    });
    console.log(`# base image (made or found by the check whether a container can start): ${seconds(t0)}`);
  } catch {
    return false;
  }
  try {
    execFileSync('podman', ['run', '--rm', '--network=none', BASE, 'true'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: ENGINE_ENV,
      timeout: 120_000,
    });
  } catch (e) {
    const why = String((e as { stderr?: Buffer }).stderr ?? e)
      .split('\n')
      .find((l) => /error|denied|not permitted/i.test(l));
    return `podman cannot start a container here (${(why ?? 'podman run failed').trim().slice(0, 160)})`;
  }
  return false;
}

/**
 * Runs a command with a deadline; resolves with its standard output (podman's own complaints, e.g. that
 * no systemd runs health-check timers, go to standard error) and rejects with the tail of both on a
 * non-zero exit or on the deadline. With `log`, its whole output also goes to that file, each chunk
 * marked with the seconds since start.
 */
export function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
  env = ENGINE_ENV,
  log?: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let both = '';
    const t0 = Date.now();
    if (log) writeFileSync(log, `$ ${cmd} ${args.join(' ')}\n`);
    const take = (d: Buffer) => {
      both = (both + d).slice(-200_000);
      if (log) appendFileSync(log, `[${((Date.now() - t0) / 1000).toFixed(0)} s] ${d}`);
    };
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      take(d);
    });
    child.stderr.on('data', take);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')}: ${signal ?? code}\n${both.slice(-4000)}`));
    });
  });
}
export const podman = (args: string[], timeoutMs = 60_000) => run('podman', args, timeoutMs);
export const image = (app: string) => `localhost/infer/${app}:${TAG}`;
let headAtStart: string | undefined;
/** The commit checked out when the tests started: what the images are labelled with and checked against,
 * even if HEAD moves while they run. */
export const revision = () =>
  (headAtStart ??= execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim());

let built: Promise<void> | undefined;
/** Builds the base and every image (once per process). */
export function buildAll(): Promise<void> {
  built ??= buildAllOnce();
  return built;
}

/** Where each image build's whole output goes (one file per app, timed): a failure shows only its tail. */
export const BUILD_LOGS = join(tmpdir(), 'infer-image-builds');

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(0)} s`;

async function buildAllOnce(): Promise<void> {
  const t0 = Date.now();
  mkdirSync(BUILD_LOGS, { recursive: true });
  await run('bash', ['docker/engine/base-image.sh'], 30 * 60_000, ENGINE_ENV, join(BUILD_LOGS, 'base.log'));
  console.log(`# base image: ${seconds(t0)}`);
  const ca = process.env.NODE_EXTRA_CA_CERTS ?? '/etc/ssl/certs/ca-certificates.crt';
  const build = async (app: string) => {
    const t = Date.now();
    await run(
      'nice',
      [
        '-n',
        '15',
        'podman',
        'build',
        '--format',
        'docker', // keeps HEALTHCHECK (the OCI format drops it)
        '--network=host',
        '--pull=never',
        '--layers',
        ...(existsSync(ca) ? ['--secret', `id=npm-ca,src=${ca}`] : []),
        '--build-arg',
        `REVISION=${revision()}`,
        '-f',
        `docker/${app}.Dockerfile`,
        '-t',
        image(app),
        '.',
      ],
      45 * 60_000,
      ENGINE_ENV,
      join(BUILD_LOGS, `${app}.log`),
    );
    console.log(`# image build ${app}: ${seconds(t)}`);
  };
  // The first build makes the shared layers; the rest reuse them, two at a time.
  const [first, ...rest] = APPS;
  const t1 = Date.now();
  await build(first!);
  for (let i = 0; i < rest.length; i += 2) await Promise.all(rest.slice(i, i + 2).map(build));
  console.log(`# images built in ${seconds(t1)} (with the base: ${seconds(t0)}; logs in ${BUILD_LOGS})`);
}
