// The container engine for the deploy tests that run images (containers.spec.ts, kube-play.spec.ts):
// Debian's podman, rootful, with docker/engine/'s settings; the images built once per run and cached in
// podman's storage (the shared layers and the npm cache survive between runs).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './k8s-support.js';

export const ENGINE_ENV = {
  ...process.env,
  CONTAINERS_CONF: join(REPO, 'docker/engine/containers.conf'),
  CONTAINERS_STORAGE_CONF: join(REPO, 'docker/engine/storage.conf'),
};
export const APPS = readdirSync(join(REPO, 'apps')).filter(
  (a) => a !== 'console' && existsSync(join(REPO, 'docker', `${a}.Dockerfile`)),
);
export const BASE = 'docker.io/library/node:26-bookworm-slim';
export const TAG = 'test';

export function skipReason(): string | false {
  // Opt-in until the whole run passes end to end on this machine (issue 40): a cold build of every image
  // takes longer than the rest of the suite, and the run has not yet finished once.
  if (process.env.INFER_CONTAINER_TESTS !== '1')
    return 'set INFER_CONTAINER_TESTS=1 to build and run the images';
  if (process.env.INFER_SKIP_CONTAINERS) return 'INFER_SKIP_CONTAINERS is set';
  if (process.getuid?.() !== 0) return 'not root: the container tests use rootful podman';
  try {
    execFileSync('podman', ['--version'], { stdio: 'ignore', env: ENGINE_ENV });
  } catch {
    return 'no podman on this machine (scripts/test.sh installs it where apt-get can)';
  }
  return false;
}

/** Runs a command with a deadline; rejects with its output's tail on a non-zero exit or on the deadline. */
export function run(cmd: string, args: string[], timeoutMs: number, env = ENGINE_ENV): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out = (out + d).slice(-200_000)));
    child.stderr.on('data', (d) => (out = (out + d).slice(-200_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')}: ${signal ?? code}\n${out.slice(-4000)}`));
    });
  });
}
export const podman = (args: string[], timeoutMs = 60_000) => run('podman', args, timeoutMs);
export const image = (app: string) => `localhost/infer/${app}:${TAG}`;
export const revision = () =>
  execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();

let built: Promise<void> | undefined;
/** Builds the base and every image (once per process). */
export function buildAll(): Promise<void> {
  built ??= buildAllOnce();
  return built;
}

async function buildAllOnce(): Promise<void> {
  await run('bash', ['docker/engine/base-image.sh'], 30 * 60_000);
  const ca = process.env.NODE_EXTRA_CA_CERTS ?? '/etc/ssl/certs/ca-certificates.crt';
  const build = (app: string) =>
    run(
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
    );
  // The first build makes the shared layers; the rest reuse them, two at a time.
  const [first, ...rest] = APPS;
  const t0 = Date.now();
  await build(first!);
  console.log(`# image build ${first}: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  for (let i = 0; i < rest.length; i += 2) {
    const t = Date.now();
    await Promise.all(rest.slice(i, i + 2).map(build));
    console.log(
      `# image build ${rest.slice(i, i + 2).join(', ')}: ${((Date.now() - t) / 1000).toFixed(0)} s`,
    );
  }
  console.log(`# images built in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
