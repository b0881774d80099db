/**
 * No production dependency gives String.prototype an heir (ADR 0063). In Node 26's V8, once any object
 * other than a String wrapper has String.prototype as its prototype (`class X extends String`,
 * `Object.create(String.prototype)`), String.prototype's own methods (charCodeAt, indexOf, slice, ...)
 * lose their fast paths in the whole process, 2-4x slower for as long as it runs: ioredis 6.0.0 did that
 * at import (its RESP3 VerbatimString), in every service. This reads the source of every package the
 * product depends on (package.json `dependencies`, followed through theirs) for such a definition.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '../../..');
const HEIR =
  /\bextends\s+String\b|Object\.create\(\s*String\.prototype\b|setPrototypeOf\([^)]*String\.prototype\b|__proto__\s*:\s*String\.prototype\b/;
const SOURCE = /\.(c|m)?js$/;

interface Manifest {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const manifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));

/** Where `name` resolves from a package at `from`: the nearest node_modules/<name> on the way up. */
function resolvePackage(name: string, from: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === ROOT || dirname(dir) === dir) return null;
  }
}

/** The installed packages the product's dependencies pull in, the root's own first. */
function productionClosure(): string[] {
  const seen = new Set<string>();
  const todo: Array<[string, string]> = [];
  const add = (from: string, m: Manifest) => {
    for (const name of Object.keys({ ...m.dependencies, ...m.optionalDependencies })) todo.push([name, from]);
  };
  add(ROOT, manifest(ROOT));
  while (todo.length) {
    const [name, from] = todo.pop() as [string, string];
    const dir = resolvePackage(name, from);
    // An optional dependency for another platform is not installed; a workspace package is ours.
    if (!dir || seen.has(dir) || name.startsWith('@infer/')) continue;
    seen.add(dir);
    add(dir, manifest(dir));
  }
  return [...seen];
}

/** JavaScript files of one package, its own nested node_modules left to the closure. */
function* sources(dir: string): Generator<string> {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (d.isDirectory()) {
      if (d.name !== 'node_modules') yield* sources(join(dir, d.name));
    } else if (SOURCE.test(d.name)) yield join(dir, d.name);
  }
}

describe('production dependencies and String.prototype (ADR 0063)', () => {
  it('recognises what it looks for', () => {
    assert.match('class VerbatimString extends String {', HEIR);
    assert.match('const o = Object.create(String.prototype)', HEIR);
    assert.doesNotMatch('class Name extends Strings {}', HEIR);
  });

  it('no package the product loads defines a String subclass', () => {
    const packages = productionClosure();
    assert.ok(
      packages.some((p) => p.endsWith('node_modules/ioredis')),
      'the closure reaches ioredis',
    );
    const heirs: string[] = [];
    for (const p of packages) {
      for (const file of sources(p)) {
        const text = readFileSync(file, 'utf8');
        if (text.includes('String') && HEIR.test(text)) heirs.push(file.slice(ROOT.length + 1));
      }
    }
    assert.deepEqual(
      heirs,
      [],
      'these files give String.prototype an heir (slows every string method: ADR 0063)',
    );
  });
});
