// ESM loader hooks: compile .ts files with swc (decorators + metadata for NestJS),
// and let `./x.js` specifiers find `./x.ts` sources, as TypeScript's NodeNext style expects.
import { readFile } from 'node:fs/promises';
import { transform } from '@swc/core';
import { swcOptions } from './swc-options.js';

export async function resolve(specifier, context, nextResolve) {
  try {
    const r = await nextResolve(specifier, context);
    // `--conditions=source` is meant for our workspace packages; a dependency that publishes its own
    // `source` condition (eventsource-parser, used by the MCP SDK client) must load its built files.
    if (r.url.includes('/node_modules/') && r.url.endsWith('.ts') && context.conditions?.includes('source')) {
      return nextResolve(specifier, {
        ...context,
        conditions: context.conditions.filter((c) => c !== 'source'),
      });
    }
    return r;
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND' && /^\.{1,2}\//.test(specifier) && specifier.endsWith('.js')) {
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
    throw err;
  }
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith('.ts') || url.includes('/node_modules/')) return nextLoad(url, context);
  const filename = new URL(url).pathname;
  const source = await readFile(filename, 'utf8');
  const out = await transform(source, { ...swcOptions, filename, sourceFileName: filename });
  return { format: 'module', source: out.code, shortCircuit: true };
}
