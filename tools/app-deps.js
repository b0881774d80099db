// The npm packages one app needs at run time, so that its image carries only those (docker/*.Dockerfile).
// The root package.json lists every package of the monorepo, and the apps' own package.json files list
// only some of theirs, so this reads the code instead, with the TypeScript parser (not a pattern): the app's
// sources and those of the @infer libraries they import (transitively; libraries found by their
// package.json name under the workspace folders), without specs and type-only imports. A package counts
// when its name is the argument of an import or export declaration, import(), require(),
// require.resolve(), createRequire(...)(...) or createRequire(...).resolve(...), or when any other string
// literal of the code is exactly the name of one of the root package.json's runtime dependencies (a name
// passed around before it is loaded). Versions are the lockfile's (the root package-lock.json is copied
// into the runtime tree). Optional dependencies are left out of the install (--omit=optional), which drops
// node-llama-cpp's CUDA and Vulkan builds; the CPU build is added by name where an embedded llama.cpp
// engine runs. The images' tests load every engine in the built image (test/deploy/containers.spec.ts).
//   node tools/app-deps.js manifests <dir>        the lockfile and every workspace's package.json (what `npm ci` reads)
//   node tools/app-deps.js image <app> <dir>      the whole runtime tree of the app's image at <dir> (see imageTree)
//   node tools/app-deps.js manifest <app> <dir>   write <dir>/package.json for `npm install --omit=dev --omit=optional`
//   node tools/app-deps.js libs <app> <dir>       copy the @infer libraries it uses (package.json + dist) to <dir>/libs, linked from node_modules/@infer
//   node tools/app-deps.js prune <dir>            drop what no process of this platform loads (see prune)
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
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const BUILTINS = new Set(builtinModules);
/** Packages loaded by name at run time without an import in our code: added when their parent is used. */
const COMPANIONS = {
  'node-llama-cpp': ['@node-llama-cpp/linux-x64'],
  '@prisma/client': ['@prisma/client-runtime-utils'],
};
const ROOT_PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
/** The root's runtime dependencies: a string literal equal to one of these names counts as a use. */
const RUNTIME_DEPS = new Set(Object.keys(ROOT_PKG.dependencies ?? {}));

/** The workspace folders (package.json "workspaces", `dir/*` globs), relative to the root. */
export function workspaces() {
  const out = [];
  for (const pattern of ROOT_PKG.workspaces ?? []) {
    if (pattern.endsWith('/*')) {
      const parent = pattern.slice(0, -2);
      if (!existsSync(join(ROOT, parent))) continue;
      for (const e of readdirSync(join(ROOT, parent), { withFileTypes: true }))
        if (e.isDirectory() && existsSync(join(ROOT, parent, e.name, 'package.json')))
          out.push(`${parent}/${e.name}`);
    } else if (existsSync(join(ROOT, pattern, 'package.json'))) out.push(pattern);
  }
  return out.sort();
}

/** Workspace package name -> its folder (relative to the root). */
function workspaceNames() {
  return new Map(
    workspaces().map((w) => [JSON.parse(readFileSync(join(ROOT, w, 'package.json'), 'utf8')).name, w]),
  );
}

function* sourceFiles(dir) {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sourceFiles(p);
    else if (/\.(ts|mts|cts|js|mjs|cjs)$/.test(e.name) && !/\.(spec|d)\.[mc]?ts$/.test(e.name)) yield p;
  }
}

function packageName(spec) {
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:') || BUILTINS.has(spec))
    return null;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

let ts;
function typescript() {
  ts ??= createRequire(import.meta.url)('typescript');
  return ts;
}

/** Every module specifier one source file loads at run time (see the header), and its other literals. */
export function specifiersOf(code, fileName = 'x.ts') {
  const t = typescript();
  const sf = t.createSourceFile(fileName, code, t.ScriptTarget.Latest, false);
  const loads = [];
  const literals = [];
  const text = (n) => (n && (t.isStringLiteral(n) || t.isNoSubstitutionTemplateLiteral(n)) ? n.text : null);
  const isLoader = (callee) => {
    if (callee.kind === t.SyntaxKind.ImportKeyword) return true;
    if (t.isIdentifier(callee)) return callee.text === 'require';
    if (t.isCallExpression(callee)) return true; // createRequire(...)('pkg')
    // require.resolve, createRequire(...).resolve, import.meta.resolve (not path.resolve and the like)
    if (t.isPropertyAccessExpression(callee) && callee.name.text === 'resolve') {
      const o = callee.expression;
      return (t.isIdentifier(o) && o.text === 'require') || t.isCallExpression(o) || t.isMetaProperty(o);
    }
    return false;
  };
  const visit = (n) => {
    if (t.isTypeNode(n) || t.isInterfaceDeclaration(n) || t.isTypeAliasDeclaration(n)) return;
    if (t.isImportDeclaration(n)) {
      if (!n.importClause?.isTypeOnly) loads.push(text(n.moduleSpecifier));
      return;
    }
    if (t.isExportDeclaration(n)) {
      if (n.moduleSpecifier && !n.isTypeOnly) loads.push(text(n.moduleSpecifier));
      return;
    }
    if (t.isImportEqualsDeclaration(n) && t.isExternalModuleReference(n.moduleReference)) {
      if (!n.isTypeOnly) loads.push(text(n.moduleReference.expression));
      return;
    }
    if (t.isCallExpression(n) && n.arguments.length && isLoader(n.expression)) {
      const s = text(n.arguments[0]);
      if (s !== null) loads.push(s);
    } else if (t.isStringLiteral(n) || t.isNoSubstitutionTemplateLiteral(n)) literals.push(n.text);
    t.forEachChild(n, visit);
  };
  visit(sf);
  return { loads: loads.filter((s) => s !== null), literals };
}

/** { packages: Set of npm packages, libs: Set of workspace folders (libs/x) } of one app. */
export function appDependencies(app) {
  const names = workspaceNames();
  const packages = new Set();
  const libs = new Set();
  const queue = [join(ROOT, 'apps', app, 'src')];
  const seen = new Set();
  const use = (spec) => {
    const name = packageName(spec);
    if (!name) return;
    const ws = names.get(name);
    if (ws) {
      if (ws.startsWith('apps/')) return; // another app: never a runtime dependency
      libs.add(ws);
      queue.push(join(ROOT, ws, 'src'));
    } else packages.add(name);
  };
  while (queue.length) {
    const dir = queue.shift();
    if (seen.has(dir)) continue;
    seen.add(dir);
    for (const file of sourceFiles(dir)) {
      const { loads, literals } = specifiersOf(readFileSync(file, 'utf8'), file);
      for (const s of loads) use(s);
      for (const s of literals) if (RUNTIME_DEPS.has(s)) use(s);
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

/** `npm install` of a manifest, without dev and optional packages; with the root lockfile: its versions. */
function npmInstall(dir, { lock = false } = {}) {
  if (lock) cpSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
  execFileSync(
    'npm',
    [
      'install',
      '--omit=dev',
      '--omit=optional',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      ...(lock ? [] : ['--no-package-lock']),
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

function duBytes(dir) {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split(/\s/)[0]);
}

/** Copies the app's workspace libraries (package.json + dist) to <dir>, linked from <dir>/node_modules. */
function copyLibs(app, dir) {
  // As npm workspaces lay them out: libs/<lib> with a link from node_modules/<name>, so that paths a
  // library computes from its own location (the migrations folder) stay right.
  for (const ws of appDependencies(app).libs) {
    const name = JSON.parse(readFileSync(join(ROOT, ws, 'package.json'), 'utf8')).name;
    const to = join(dir, ws);
    mkdirSync(to, { recursive: true });
    cpSync(join(ROOT, ws, 'package.json'), join(to, 'package.json'));
    cpSync(join(ROOT, ws, 'dist'), join(to, 'dist'), { recursive: true });
    const link = join(dir, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    rmSync(link, { recursive: true, force: true });
    symlinkSync(relative(dirname(link), to), link);
  }
}

const PLATFORMS = new Set(['aix', 'android', 'darwin', 'freebsd', 'linux', 'openbsd', 'sunos', 'win32']);
const ARCHES = new Set([
  'arm',
  'arm64',
  'ia32',
  'loong64',
  'mips',
  'mipsel',
  'ppc64',
  'riscv64',
  's390x',
  'x64',
]);
/** Files of single packages that no process here loads: sources for building from scratch. */
const SOURCE_BUNDLES = { 'node-llama-cpp': ['llama/gitRelease.bundle', 'llama/llama.cpp'] };

/** The Prisma datasource provider of prisma/schema.prisma (null without one). */
function prismaProvider() {
  const file = join(ROOT, 'prisma', 'schema.prisma');
  if (!existsSync(file)) return null;
  return /datasource\s+\w+\s*\{[^}]*provider\s*=\s*"(\w+)"/.exec(readFileSync(file, 'utf8'))?.[1] ?? null;
}

/**
 * Drops from <dir>/node_modules what no process on this platform loads: other platforms' and
 * architectures' native builds (`bin/napi-v*\/<platform>/<arch>`, `prebuilds/<platform>-<arch>`),
 * Prisma's query compilers for the databases the schema does not use, source bundles (SOURCE_BUNDLES),
 * source maps and type declarations. Returns the bytes dropped.
 */
export function prune(dir, { platform = process.platform, arch = process.arch } = {}) {
  const provider = prismaProvider();
  const providers = ['cockroachdb', 'mysql', 'postgresql', 'sqlite', 'sqlserver'];
  const otherDb = provider
    ? new RegExp(`^query_compiler_\\w+?\\.(${providers.filter((p) => p !== provider).join('|')})\\.`)
    : null;
  let bytes = 0;
  const drop = (p) => {
    if (!existsSync(p)) return;
    bytes += statSync(p).isDirectory() ? duBytes(p) : statSync(p).size;
    rmSync(p, { recursive: true, force: true });
  };
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) continue;
      if (e.isDirectory()) {
        if (/^napi-v\d+$/.test(e.name) || e.name === 'prebuilds') {
          for (const c of readdirSync(p)) {
            const [os, cpu] = c.split('-');
            if (PLATFORMS.has(c) && c !== platform) drop(join(p, c));
            else if (c === platform && statSync(join(p, c)).isDirectory())
              for (const a of readdirSync(join(p, c))) if (ARCHES.has(a) && a !== arch) drop(join(p, c, a));
            if (PLATFORMS.has(os) && ARCHES.has(cpu) && (os !== platform || cpu !== arch)) drop(join(p, c));
          }
        }
        if (existsSync(p)) walk(p);
      } else if (/\.(map|d\.ts|d\.mts|d\.cts)$/.test(e.name)) drop(p);
      else if (otherDb?.test(e.name) && d.endsWith(join('@prisma', 'client', 'runtime'))) drop(p);
    }
  };
  const nm = join(dir, 'node_modules');
  for (const [pkg, files] of Object.entries(SOURCE_BUNDLES)) for (const f of files) drop(join(nm, pkg, f));
  if (existsSync(nm)) walk(nm);
  return bytes;
}

/**
 * The runtime tree of an app's image at <dir> (/app in the image): its packages at the lockfile's
 * versions, a CycloneDX SBOM of them (sbom.cdx.json, @cyclonedx/cyclonedx-npm), its workspace
 * libraries, its build, prisma/ and config/, pruned (see prune); then the app's own `image:prepare`
 * script (package.json), run in <dir>, for what is best done once at build time.
 */
export function imageTree(app, dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest(app), null, 2)}\n`);
  npmInstall(dir, { lock: true });
  execFileSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/@cyclonedx/cyclonedx-npm/bin/cyclonedx-npm-cli.js'),
      '--omit',
      'dev',
      '--omit',
      'optional',
      '--output-reproducible',
      '--output-format',
      'JSON',
      '--output-file',
      join(dir, 'sbom.cdx.json'),
      join(dir, 'package.json'),
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  copyLibs(app, dir);
  const appPkg = JSON.parse(readFileSync(join(ROOT, 'apps', app, 'package.json'), 'utf8'));
  mkdirSync(join(dir, 'apps', app), { recursive: true });
  cpSync(join(ROOT, 'apps', app, 'package.json'), join(dir, 'apps', app, 'package.json'));
  cpSync(join(ROOT, 'apps', app, 'dist'), join(dir, 'apps', app, 'dist'), { recursive: true });
  for (const d of ['prisma', 'config'])
    if (existsSync(join(ROOT, d))) cpSync(join(ROOT, d), join(dir, d), { recursive: true });
  cpSync(join(ROOT, 'tools', 'healthcheck.mjs'), join(dir, 'healthcheck.mjs'));
  const dropped = prune(dir);
  const prepare = appPkg.scripts?.['image:prepare'];
  if (prepare) execFileSync('/bin/sh', ['-c', prepare], { cwd: dir, stdio: 'inherit' });
  console.log(
    `${app}: ${Object.keys(manifest(app).dependencies).length} packages, ${(duBytes(dir) / 1e6).toFixed(1)} MB (${(dropped / 1e6).toFixed(1)} MB pruned)`,
  );
}

const [cmd, ...args] = import.meta.main ? process.argv.slice(2) : ['--imported'];
if (cmd === '--imported') {
  // imported (the tests): no command
} else if (cmd === 'manifest') {
  const [app, dir] = args;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest(app), null, 2)}\n`);
} else if (cmd === 'manifests') {
  const [dir] = args;
  for (const f of ['package.json', 'package-lock.json', ...workspaces().map((w) => `${w}/package.json`)]) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(ROOT, f), join(dir, f));
  }
} else if (cmd === 'image') {
  imageTree(args[0], args[1]);
} else if (cmd === 'prune') {
  console.log(`${(prune(args[0]) / 1e6).toFixed(1)} MB pruned`);
} else if (cmd === 'libs') {
  const [app, dir] = args;
  copyLibs(app, dir);
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
  console.error(
    'usage: node tools/app-deps.js manifests <dir> | image|manifest|libs <app> <dir> | prune <dir> | list <app> | size [app ...]',
  );
  process.exit(2);
}
