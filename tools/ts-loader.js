// Module hooks (module.registerHooks, synchronous): compile .ts files with swc (decorators + metadata
// for NestJS), and let `./x.js` specifiers find `./x.ts` sources, as TypeScript's NodeNext style expects.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transformSync } from '@swc/core';
import { swcOptions } from './swc-options.js';

export function resolve(specifier, context, nextResolve) {
  try {
    return nextResolve(specifier, context);
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND' && /^\.{1,2}\//.test(specifier) && specifier.endsWith('.js')) {
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
    throw err;
  }
}

// `--conditions=source` is meant for our workspace packages, but a dependency that publishes its own
// `source` condition (eventsource-parser, used by the MCP SDK client) then resolves to its TypeScript
// sources too. Node refuses to strip types under node_modules, and synchronous hooks cannot resolve
// again with other conditions, so those files are compiled by swc like ours.
export function load(url, context, nextLoad) {
  if (!url.endsWith('.ts')) return nextLoad(url, context);
  const filename = fileURLToPath(url);
  const source = readFileSync(filename, 'utf8');
  const out = transformSync(source, { ...swcOptions, filename, sourceFileName: filename });
  return { format: 'module', source: out.code, shortCircuit: true };
}
