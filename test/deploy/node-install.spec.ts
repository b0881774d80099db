// scripts/lib.sh's check of the Node.js build it installs (require_node): the shared libraries the build
// needs are installed first, and a build that still does not run is reported with node's own error
// output. Runs the script's functions in bash against a fake node and fake system tools on PATH.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';

const REPO = resolve(import.meta.dirname, '../..');
const LIB = join(REPO, 'scripts/lib.sh');

function script(path: string, body: string): void {
  writeFileSync(path, `#!/bin/bash\n${body}\n`);
  chmodSync(path, 0o755);
}

describe('scripts/lib.sh: checking the Node.js build', () => {
  const dir = mkdtempSync(join(tmpdir(), 'node-check-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  const build = join(dir, 'build');
  mkdirSync(bin);
  mkdirSync(join(build, 'bin'), { recursive: true });
  const aptLog = join(dir, 'apt.log');
  // A system without libatomic (ldconfig does not list it) and an apt-get that records what it installs.
  script(
    join(bin, 'ldconfig'),
    'echo "1 libs found in cache"; echo "	libc.so.6 (libc6,x86-64) => /lib/libc.so.6"',
  );
  script(join(bin, 'apt-get'), `echo "$*" >>${JSON.stringify(aptLog)}`);
  script(join(bin, 'sudo'), '"$@"');

  const run = (fn: string) =>
    spawnSync('bash', ['-c', `. ${JSON.stringify(LIB)}; ${fn}`], {
      encoding: 'utf8',
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir },
    });

  it('installs libatomic1 when the dynamic linker does not know libatomic.so.1', () => {
    rmSync(aptLog, { force: true });
    const r = run('_node_runtime_libs');
    assert.equal(r.status, 0, r.stderr);
    assert.match(readFileSync(aptLog, 'utf8'), /install .*libatomic1/);
  });

  it("a build that fails to start is reported with node's own error, not 'no version'", () => {
    script(
      join(build, 'bin/node'),
      'echo "node: error while loading shared libraries: libatomic.so.1: cannot open shared object file: No such file or directory" >&2; exit 127',
    );
    const r = run(
      `_node_build_version ${JSON.stringify(build)} || { echo "FAILED: $(_node_build_version ${JSON.stringify(build)})"; exit 3; }`,
    );
    assert.equal(r.status, 3);
    assert.match(
      r.stdout,
      /FAILED: node exited with status 127: .*libatomic\.so\.1: cannot open shared object file/,
    );
    assert.doesNotMatch(r.stdout, /no version/);
  });

  it('a build that runs prints its version', () => {
    script(join(build, 'bin/node'), 'echo 26.10.0');
    const r = run(`_node_build_version ${JSON.stringify(build)}`);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(r.stdout.trim(), '26.10.0');
  });

  it('a build too old says so', () => {
    script(join(build, 'bin/node'), 'echo 18.19.0');
    const r = run(`_node_build_version ${JSON.stringify(build)}`);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /version 18\.19\.0, older than/);
  });
});
