// The console SSO test's identity provider loads without a warning in the test output (Node 24 or 26).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { it } from 'node:test';

it('loading oidc-provider prints no "Unsupported runtime" warning', () => {
  const r = spawnSync(
    process.execPath,
    [
      '--conditions=source',
      '--import',
      './tools/ts-register.js',
      '--input-type=module',
      '-e',
      "const { loadOidcProvider } = await import('./test/support/oidc-provider.ts'); const P = await loadOidcProvider(); if (typeof P !== 'function') process.exit(3);",
    ],
    { cwd: resolve(import.meta.dirname, '../..'), encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(`${r.stdout}${r.stderr}`, /Unsupported runtime/);
});
