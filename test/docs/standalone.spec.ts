/**
 * The repository stands alone and its docs describe the present (docs/architecture.md, rule 11): no
 * tracked file refers to documents that live outside it, docs/performance.md stays one current page,
 * and no page under docs/ is a dated journal (dated write-ups belong in bench/results/ or git history).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Names of documents kept outside the repository (spelled in pieces so this file does not name them). */
const OUTSIDE = [
  ['PLATFORM', 'md'].join('.'),
  ['ARCHITECTURE', 'md'].join('.'),
  ['CONSOLE', 'md'].join('.'),
  ['inference-api', 'md'].join('.'),
  ['shared', 'spec'].join('/'),
  ['..', 'shared', ''].join('/'),
  ['', 'work', 'shared'].join('/'),
];

function trackedTextFiles(): string[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  return files.filter((f) => f && !/\.(png|jpe?g|gif|ico|onnx|gguf|wasm|woff2?|lock)$/.test(f));
}

describe('the repository stands alone', () => {
  it('no tracked file refers to a document outside the repository', () => {
    const hits: string[] = [];
    for (const file of trackedTextFiles()) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), 'utf8');
      } catch {
        continue; // deleted in the work tree
      }
      if (text.includes('\0')) continue; // binary
      const lines = text.split('\n');
      lines.forEach((line, i) => {
        for (const name of OUTSIDE) if (line.includes(name)) hits.push(`${file}:${i + 1}: ${name}`);
      });
    }
    assert.deepEqual(hits, []);
  });

  it('docs/performance.md is one current page under 300 lines', () => {
    const page = readFileSync(join(ROOT, 'docs/performance.md'), 'utf8');
    assert.ok(page.split('\n').length < 300, `${page.split('\n').length} lines`);
  });

  it('no page under docs/ has dated sections (a journal)', () => {
    const pages = execFileSync('git', ['ls-files', 'docs'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.md'));
    assert.ok(pages.length > 10);
    const dated: string[] = [];
    for (const f of pages) {
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/^#{1,6} .*\b20\d\d-\d\d-\d\d\b/.test(line)) dated.push(`${f}:${i + 1}: ${line}`);
        });
    }
    assert.deepEqual(dated, []);
  });
});
