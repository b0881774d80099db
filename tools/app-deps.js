// The npm packages one app needs at run time, so that its image carries only those (docker/*.Dockerfile).
// The root package.json lists every package of the monorepo, and the apps' own package.json files list
// only some of theirs, so this reads the code instead: every import of the app's sources and of the
// @infer libraries they import (transitively), without specs and type-only imports. Versions are the
// installed ones (the lockfile's). Optional dependencies are left out of the install (--omit=optional),
// which drops node-llama-cpp's CUDA and Vulkan builds; the CPU build is added by name where an embedded
// llama.cpp engine runs.
//   node tools/app-deps.js manifest <app> <dir>   write <dir>/package.json for `npm install --omit=dev --omit=optional`
//   node tools/app-deps.js libs <app> <dir>       copy the @infer libraries it uses (package.json + dist) to <dir>/libs, linked from node_modules/@infer
//   node tools/app-deps.js list <app>             print the packages
//   node tools/app-deps.js size [app ...]         install each app's packages in a temporary folder and print the sizes
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const BUILTINS = new Set(builtinModules);
/** Packages loaded by name at run time without an import in our code: added when their parent is used. */
const COMPANIONS = {
  'node-llama-cpp': ['@node-llama-cpp/linux-x64'],
  '@prisma/client': ['@prisma/client-runtime-utils'],
};

function* sourceFiles(dir) {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sourceFiles(p);
    else if (/\.(ts|js|mjs|cjs)$/.test(e.name) && !/\.(spec|d)\.ts$/.test(e.name)) yield p;
  }
}

const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/gm;

function packageName(spec) {
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:') || BUILTINS.has(spec))
    return null;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** { packages: Set of npm packages, libs: Set of @infer library folder names } of one project folder. */
export function appDependencies(app) {
  const packages = new Set();
  const libs = new Set();
  const queue = [join(ROOT, 'apps', app, 'src')];
  const seen = new Set();
  while (queue.length) {
    const dir = queue.shift();
    if (seen.has(dir)) continue;
    seen.add(dir);
    for (const file of sourceFiles(dir)) {
      const code = readFileSync(file, 'utf8');
      for (const m of code.matchAll(IMPORT_RE)) {
        if (m[1]) continue; // import type / export type: erased by the compiler
        const name = packageName(m[2] ?? m[3]);
        if (!name) continue;
        if (name.startsWith('@infer/')) {
          const lib = name.slice('@infer/'.length);
          libs.add(lib);
          queue.push(join(ROOT, 'libs', lib, 'src'));
        } else packages.add(name);
      }
    }
  }
  for (const p of [...packages]) for (const c of COMPANIONS[p] ?? []) packages.add(c);
  return { packages, libs };
}

function installedVersion(pkg) {
  const file = join(ROOT, 'node_modules', pkg, 'package.json');
  if (!existsSync(file)) throw new Error(`${pkg} is imported but not installed: npm install it first`);
  return JSON.parse(readFileSync(file, 'utf8')).version;
}

export function manifest(app) {
  const { packages } = appDependencies(app);
  const dependencies = Object.fromEntries([...packages].sort().map((p) => [p, installedVersion(p)]));
  return { name: `@infer/${app}-image`, private: true, type: 'module', dependencies };
}

function npmInstall(dir) {
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
    { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

function duBytes(dir) {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split(/\s/)[0]);
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'manifest') {
  const [app, dir] = args;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest(app), null, 2)}\n`);
} else if (cmd === 'libs') {
  const [app, dir] = args;
  // As npm workspaces lay them out: libs/<lib> with a link from node_modules/@infer/<lib>, so that
  // paths a library computes from its own location (the migrations folder) stay right.
  mkdirSync(join(dir, 'node_modules', '@infer'), { recursive: true });
  for (const lib of appDependencies(app).libs) {
    const to = join(dir, 'libs', lib);
    mkdirSync(to, { recursive: true });
    cpSync(join(ROOT, 'libs', lib, 'package.json'), join(to, 'package.json'));
    cpSync(join(ROOT, 'libs', lib, 'dist'), join(to, 'dist'), { recursive: true });
    rmSync(join(dir, 'node_modules', '@infer', lib), { recursive: true, force: true });
    symlinkSync(join('..', '..', 'libs', lib), join(dir, 'node_modules', '@infer', lib));
  }
} else if (cmd === 'list') {
  const { packages, libs } = appDependencies(args[0]);
  console.log(JSON.stringify({ packages: [...packages].sort(), libs: [...libs].sort() }, null, 2));
} else if (cmd === 'size') {
  const apps = args.length
    ? args
    : readdirSync(join(ROOT, 'apps')).filter((a) => existsSync(join(ROOT, 'apps', a, 'src')));
  const fullTree = duBytes(join(ROOT, 'node_modules'));
  console.log(`whole monorepo node_modules (what every image carried): ${(fullTree / 1e6).toFixed(0)} MB`);
  console.log('app                 packages  node_modules (MB)  llama.cpp builds');
  for (const app of apps) {
    const dir = mkdtempSync(join(tmpdir(), `app-deps-${app}-`));
    try {
      writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest(app)));
      npmInstall(dir);
      const nm = join(dir, 'node_modules');
      const llama = existsSync(join(nm, '@node-llama-cpp'))
        ? readdirSync(join(nm, '@node-llama-cpp')).join(',')
        : '-';
      const count = Object.keys(manifest(app).dependencies).length;
      console.log(
        `${app.padEnd(20)}${String(count).padStart(8)}${(duBytes(nm) / 1e6).toFixed(1).padStart(19)}  ${llama}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} else {
  console.error('usage: node tools/app-deps.js manifest|libs <app> <dir> | list <app> | size [app ...]');
  process.exit(2);
}
