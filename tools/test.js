// Runs the *.spec.ts files below the given folders with Node's test runner and the TS loader.
//   node tools/test.js                 -> every spec in apps/, libs/ and test/
//   node tools/test.js apps/gateway    -> one project's specs
// Unit specs run in parallel; integration specs (test/integration) share ports and run one at a time.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const roots = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const extra = process.argv.slice(2).filter((a) => a.startsWith('--'));
const dirs = roots.length ? roots : ['libs', 'apps', 'test'];

function collect(dir, out) {
  if (!existsSync(dir)) return out;
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

let status = 0;
for (const [group, concurrency] of [
  [unit, 2],
  [integration, 1],
]) {
  if (!group.length) continue;
  const r = spawnSync(process.execPath, [...base, `--test-concurrency=${concurrency}`, ...extra, ...group], {
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'test' },
  });
  if (r.status !== 0) status = r.status ?? 1;
}
if (!files.length) {
  console.error('no spec files found');
  status = 1;
}
process.exit(status);
