// The written boundaries of the repository, checked from the import statements of every .ts file:
//   node tools/check-layout.js            -> exits 1 and lists every breach
// Rules (docs/adr/0031-written-boundaries.md):
//   1. no two folders of an app import each other both ways at run time (folder = the first level
//      under src/, and one level deeper under src/admin/: one folder per admin resource; `import type`
//      and specs, which may reach into what they test, are not counted);
//   2. inside the gateway, the inference path (everything outside src/admin/) imports nothing from
//      src/admin/ (app.module.ts, which wires the admin room in, is the one exception);
//   3. bench/ imports apps and libs only through what they export: by package name, never by a
//      relative path out of bench/; a lib as @infer/<lib> (its package.json `exports`), an app only as
//      @infer/<app>/public (its src/public-api.ts: start functions and the parts benches measure);
//      the shared test doubles of test/support/ are allowed;
//   4. libs never import apps;
//   5. the three runtime libs keep their layers (ADR 0033): @infer/telemetry imports neither @infer/rpc
//      nor @infer/runtime, and @infer/rpc does not import @infer/runtime (specs not counted);
//   6. one suffix per role in the gateway: a file with a Nest @Controller is *.controller.ts, one with an
//      @Injectable is *.service.ts, *.store.ts (state in Redis or PostgreSQL), *.observer.ts (a call
//      observer), *.guard.ts or *.filter.ts; the governed call (governed-call.ts) and the MCP endpoint
//      (mcp.endpoint.ts, a raw route on the HTTP adapter) are named for what they are.
// Why a script and not a lint plugin: Biome's noRestrictedImports matches import specifiers, not the
// folder a relative import resolves to, and cannot express rule 1; this walk is ~100 lines, runs in
// well under a second and has no dependency. Its own spec (tools/check-layout.spec.ts) feeds it a
// breach of each rule.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Apps whose package name bench/ may import, and then only their `/public` entry. */
const APP_PACKAGE =
  /^@infer\/(gateway|chat-service|embedding-service|audio-service|image-service|search-service|ledger-writer|admin-cli|console)(\/.*)?$/;

/** Rule 6: the file names a gateway class with a Nest role may have. */
const ROLE_FILE = {
  Controller: /\.controller\.ts$/,
  Injectable: /(\.(service|store|observer|guard|filter)\.ts|\/governed-call\.ts|\/mcp\.endpoint\.ts)$/,
};

/** The layer of each layered lib (rule 5): a lib imports only libs of a lower layer. */
const LIB_LAYER = { telemetry: 0, rpc: 1, runtime: 2 };

const IMPORT =
  /(?:^|\s)(?:import|export)\s([^'"]*?)from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function walk(dir, out) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name === 'generated' || e.name.startsWith('.'))
      continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Every relative import of the files under `dirs` (root-relative paths, .js -> .ts); `roles` collects rule 6's misnamed files. */
export function importsOf(root, dirs, roles = []) {
  const edges = [];
  for (const d of dirs) {
    let files;
    try {
      if (!statSync(join(root, d)).isDirectory()) continue;
      files = walk(join(root, d), []);
    } catch {
      continue;
    }
    for (const abs of files) {
      const from = relative(root, abs).split(sep).join('/');
      const src = readFileSync(abs, 'utf8');
      if (from.startsWith('apps/gateway/src/') && !from.endsWith('.spec.ts'))
        for (const [role, name] of Object.entries(ROLE_FILE))
          if (new RegExp(`^@${role}\\(`, 'm').test(src) && !name.test(from)) roles.push({ from, role });
      for (const m of src.matchAll(IMPORT)) {
        const spec = m[2] ?? m[3];
        if (!spec) continue;
        // `import type {...}` leaves nothing at run time (rule 1 looks at run-time imports only).
        const typeOnly = /^type\s/.test(m[1] ?? '');
        if (spec.startsWith('.')) {
          const to = relative(root, resolve(dirname(abs), spec))
            .split(sep)
            .join('/')
            .replace(/\.js$/, '.ts');
          edges.push({ from, to, spec, typeOnly });
        } else {
          edges.push({ from, to: null, spec, typeOnly });
        }
      }
    }
  }
  return edges;
}

/** The folder of an app file that rule 1 compares: src/<folder>, or src/admin/<resource>. */
export function folderOf(path) {
  const m = /^(apps\/[^/]+\/src)\/(.+)$/.exec(path);
  if (!m) return null;
  const parts = m[2].split('/');
  if (parts.length === 1) return `${m[1]}`; // a file at src/ (main.ts, app.module.ts ...)
  if (parts[0] === 'admin' && parts.length > 2) return `${m[1]}/admin/${parts[1]}`;
  return `${m[1]}/${parts[0]}`;
}

export function check(root = ROOT) {
  const breaches = [];
  const roles = [];
  const edges = importsOf(root, ['apps', 'libs', 'bench'], roles);
  // 6. one suffix per role (gateway)
  for (const r of roles) breaches.push(`a gateway @${r.role} outside a file named for its role: ${r.from}`);
  // 1. folder pairs both ways
  const pairs = new Map();
  for (const e of edges) {
    // Specs may reach into what they test.
    if (!e.to || e.typeOnly || e.from.endsWith('.spec.ts')) continue;
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (!a || !b || a === b) continue;
    if (a.startsWith(`${b}/`) || b.startsWith(`${a}/`)) continue;
    const k = `${a} -> ${b}`;
    if (!pairs.has(k)) pairs.set(k, e);
  }
  for (const [k, e] of pairs) {
    const [a, b] = k.split(' -> ');
    if (a < b && pairs.has(`${b} -> ${a}`)) {
      const back = pairs.get(`${b} -> ${a}`);
      breaches.push(
        `folders import each other: ${a} <-> ${b} (${e.from} -> ${e.to}; ${back.from} -> ${back.to})`,
      );
    }
  }
  for (const e of edges) {
    // 2. the gateway's inference path stays out of the admin room
    if (
      e.to?.startsWith('apps/gateway/src/admin/') &&
      e.from.startsWith('apps/gateway/src/') &&
      !e.from.startsWith('apps/gateway/src/admin/') &&
      e.from !== 'apps/gateway/src/app.module.ts' &&
      !e.from.endsWith('.spec.ts')
    ) {
      breaches.push(`the inference path imports admin code: ${e.from} -> ${e.to}`);
    }
    // 3. bench/ through exports only
    if (e.from.startsWith('bench/')) {
      if (e.to && !e.to.startsWith('bench/') && !e.to.startsWith('test/support/'))
        breaches.push(`bench imports around the exports: ${e.from} -> ${e.to}`);
      const app = APP_PACKAGE.exec(e.spec);
      if (app && app[2] !== '/public')
        breaches.push(`bench imports an app other than by @infer/${app[1]}/public: ${e.from} -> ${e.spec}`);
    }
    // 4. libs never import apps
    if (
      e.from.startsWith('libs/') &&
      (e.to?.startsWith('apps/') ||
        /^@infer\/(gateway|.*-service|console|admin-cli|ledger-writer)\b/.test(e.spec))
    )
      breaches.push(`a lib imports an app: ${e.from} -> ${e.to ?? e.spec}`);
    // 5. telemetry < rpc < runtime
    const fromLib = /^libs\/([^/]+)\//.exec(e.from)?.[1];
    const toLib = e.to ? /^libs\/([^/]+)\//.exec(e.to)?.[1] : /^@infer\/([^/]+)/.exec(e.spec)?.[1];
    if (
      fromLib in LIB_LAYER &&
      toLib in LIB_LAYER &&
      LIB_LAYER[toLib] > LIB_LAYER[fromLib] &&
      !e.from.endsWith('.spec.ts')
    )
      breaches.push(`a lib imports a higher layer: ${e.from} -> ${e.to ?? e.spec}`);
  }
  return breaches;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const breaches = check();
  for (const b of breaches) console.error(b);
  if (breaches.length) {
    console.error(`${breaches.length} layout breach(es): see tools/check-layout.js for the rules.`);
    process.exit(1);
  }
  console.log(
    'layout: no folder cycles, no admin imports on the inference path, bench and libs within bounds, lib layers kept, gateway files named for their role',
  );
}
