// Builds one project: every .ts file under <project>/src is compiled by swc into <project>/dist,
// keeping the tree. Usage: node tools/build.js apps/gateway
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { transform } from '@swc/core';
import { swcOptions } from './swc-options.js';

const project = process.argv[2];
if (!project) throw new Error('usage: node tools/build.js <project-dir>');
const src = join(project, 'src');
const out = join(project, 'dist');

async function* walk(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(p);
    else if (p.endsWith('.ts') && !p.endsWith('.spec.ts') && !p.endsWith('.d.ts')) yield p;
  }
}

await rm(out, { recursive: true, force: true });
let count = 0;
for await (const file of walk(src)) {
  const code = await readFile(file, 'utf8');
  const res = await transform(code, { ...swcOptions, sourceMaps: true, filename: file });
  const target = join(out, relative(src, file)).replace(/\.ts$/, '.js');
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, `${res.code}\n//# sourceMappingURL=${target.split('/').pop()}.map\n`);
  if (res.map) await writeFile(`${target}.map`, res.map);
  count++;
}
console.log(`built ${project}: ${count} files -> ${out}`);
