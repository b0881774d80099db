import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const Native = Intl.DateTimeFormat;
const { beginIntlDeferral, endIntlDeferral } = await import('./memory.js');

const ROOT = resolve(fileURLToPath(import.meta.url), '../../../..');
const when = new Date(Date.UTC(2026, 10, 24, 22, 5, 9));
const later = new Date(Date.UTC(2026, 11, 1, 8, 0, 0));

describe('Intl.DateTimeFormat deferred while modules load', () => {
  after(() => endIntlDeferral());

  it('answers as the real formatter does', () => {
    const options: Intl.DateTimeFormatOptions = {
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      timeZone: 'Europe/Berlin',
    };
    beginIntlDeferral();
    const deferred = new Intl.DateTimeFormat('en-US', options);
    const called = Intl.DateTimeFormat('de-DE', options);
    endIntlDeferral();
    const real = new Intl.DateTimeFormat('en-US', options);
    assert.equal(Intl.DateTimeFormat, Native);
    assert.ok(deferred instanceof Intl.DateTimeFormat);
    assert.equal(Object.prototype.toString.call(deferred), '[object Intl.DateTimeFormat]');
    assert.equal(deferred.format(when), real.format(when));
    const format = deferred.format; // the real `format` is a bound function too
    assert.equal(format(when), real.format(when));
    assert.deepEqual(deferred.formatToParts(when), real.formatToParts(when));
    assert.deepEqual(deferred.resolvedOptions(), real.resolvedOptions());
    assert.equal(deferred.formatRange(when, later), real.formatRange(when, later));
    assert.equal(called.format(when), new Native('de-DE', options).format(when));
  });

  it('builds the formatter on first use, and real ones again once ended', () => {
    beginIntlDeferral();
    const bad = new Intl.DateTimeFormat('en-US', { timeZone: 'Nowhere/Bogus' }); // not checked yet
    endIntlDeferral();
    assert.throws(() => bad.format(when), RangeError);
    assert.throws(() => new Intl.DateTimeFormat('en-US', { timeZone: 'Nowhere/Bogus' }), RangeError);
  });

  it('covers the app runMain loads, not what the app makes once started', () => {
    const dir = mkdtempSync(join(tmpdir(), 'intl-deferral-'));
    try {
      const at = JSON.stringify(resolve(ROOT, 'libs/runtime/src/run-main.ts'));
      // A module that makes a formatter with an unknown time zone when it loads (as Nest's logger does).
      writeFileSync(
        join(dir, 'loads.mjs'),
        "export const f = new Intl.DateTimeFormat('en-US', { timeZone: 'Nowhere/Bogus' });\n",
      );
      writeFileSync(
        join(dir, 'entry.mjs'),
        [
          `import { runMain } from ${at};`,
          "runMain('t', () => import('./loads.mjs'), async ({ f }) => {",
          "  let late = 'made';",
          "  try { new Intl.DateTimeFormat('en-US', { timeZone: 'Nowhere/Bogus' }); } catch (e) { late = e.name; }",
          "  let first = 'formatted';",
          '  try { f.format(0); } catch (e) { first = e.name; }',
          '  console.log(JSON.stringify({ late, first }));',
          '});',
        ].join('\n'),
      );
      const out = execFileSync(
        process.execPath,
        ['--import', resolve(ROOT, 'tools/ts-register.js'), join(dir, 'entry.mjs')],
        {
          cwd: ROOT,
          encoding: 'utf8',
        },
      );
      assert.deepEqual(JSON.parse(out), { late: 'RangeError', first: 'RangeError' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is on while every app entry point loads its app (runMain), and ended before the app starts', () => {
    const entries = [
      'apps/gateway/src/main.ts',
      'apps/gateway/src/batch-runner.ts',
      ...[
        'chat-service',
        'embedding-service',
        'audio-service',
        'image-service',
        'ledger-writer',
        'search-service',
      ].map((a) => `apps/${a}/src/main.ts`),
    ];
    for (const entry of entries) {
      const src = readFileSync(resolve(ROOT, entry), 'utf8');
      // The only static import: runMain, whose module installs the deferral before anything else.
      assert.deepEqual(src.match(/^import .*$/gm), ["import { runMain } from '@infer/runtime/main';"], entry);
      // The app is loaded by runMain (dynamic import), not by the entry point's own imports.
      assert.match(src, /runMain\(\s*'[a-z-]+',\s*\(\) => import\(/, entry);
    }
    const runMain = readFileSync(resolve(ROOT, 'libs/runtime/src/run-main.ts'), 'utf8');
    // Its one static import is memory.ts (Node built-ins only), and the deferral begins right after it.
    assert.deepEqual(runMain.match(/^import .*$/gm), [
      "import { beginIntlDeferral, endIntlDeferral } from './memory.js';",
    ]);
    assert.ok(runMain.indexOf('\nbeginIntlDeferral();') < runMain.indexOf('export async function runMain'));
    const memory = readFileSync(resolve(ROOT, 'libs/runtime/src/memory.ts'), 'utf8');
    for (const spec of memory.matchAll(/^import .* from '([^']+)';$/gm))
      assert.match(spec[1] ?? '', /^node:/);
    const body = runMain.slice(runMain.indexOf('export async function runMain'));
    assert.ok(body.indexOf('await load()') < body.indexOf('endIntlDeferral()'), 'ended after the app loaded');
    assert.ok(body.indexOf('endIntlDeferral()') < body.indexOf('await start(app)'), 'ended before it starts');
  });
});
