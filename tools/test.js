// Runs the *.spec.ts files below the given folders with Node's test runner and the TS loader.
//   node tools/test.js                 -> every spec in apps/, libs/ and test/
//   node tools/test.js apps/gateway    -> one project's specs
// Unit specs run in parallel; the specs under test/ (test/integration, test/faults) share ports and
// servers and run one at a time.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const roots = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const extra = process.argv.slice(2).filter((a) => a.startsWith('--'));
const dirs = roots.length ? roots : ['libs', 'apps', 'test'];

function collect(dir, out) {
  if (!existsSync(dir)) return out;
  if (statSync(dir).isFile()) {
    out.push(dir);
    return out;
  }
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) collect(p, out);
    else if (e.name.endsWith('.spec.ts')) out.push(p);
  }
  return out;
}

const files = dirs.flatMap((d) => collect(d, [])).sort();
const unit = files.filter((f) => !f.startsWith('test/'));
const integration = files.filter((f) => f.startsWith('test/'));
const base = ['--conditions=source', '--import', './tools/ts-register.js', '--test', '--test-force-exit'];

/**
 * Loopback never goes through a proxy: the tests talk to servers on 127.0.0.1 and spawn clients (the
 * MCP Inspector, agent CLIs) that honour HTTP_PROXY / HTTPS_PROXY. NO_PROXY and no_proxy (clients read
 * either; some prefer the lower case) get the loopback names added to what they already list.
 */
const LOOPBACK_NO_PROXY = ['127.0.0.1', 'localhost', '::1', '[::1]'];
function noProxyEnv(env) {
  const listed = `${env.no_proxy ?? ''},${env.NO_PROXY ?? ''}`
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const all = [...new Set([...listed, ...LOOPBACK_NO_PROXY])].join(',');
  return { NO_PROXY: all, no_proxy: all };
}

/** Runs one group, echoing its output as it comes and keeping it to read the runner's tally. */
function run(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...noProxyEnv(process.env), NODE_ENV: 'test' },
    });
    let out = '';
    child.stdout.on('data', (d) => {
      process.stdout.write(d);
      out += d;
      if (out.length > 1e6) out = out.slice(-1e5);
    });
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

let status = 0;
let passed = 0;
let failed = 0;
let skipped = 0;
for (const [group, concurrency] of [
  [unit, 2],
  [integration, 1],
]) {
  if (!group.length) continue;
  const r = await run([
    ...base,
    '--test-reporter=spec',
    `--test-concurrency=${concurrency}`,
    ...extra,
    ...group,
  ]);
  if (r.code !== 0) status = r.code;
  const count = (k) => Number(new RegExp(`^\\S* ?${k} (\\d+)$`, 'm').exec(r.out)?.[1] ?? 0);
  passed += count('pass');
  failed += count('fail') + count('cancelled');
  skipped += count('skipped') + count('todo');
  if (r.code !== 0 && count('fail') + count('cancelled') === 0) failed += 1; // a crash outside any test
}
if (!files.length) {
  console.error('no spec files found');
  status = 1;
}
console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(status);
