import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
// @ts-expect-error: a plain .js tool without types
import { check } from '../../tools/check-layout.js';

const run = check as (root?: string) => string[];

/** A tiny repository with the given files (path -> source). */
function repo(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'layout-'));
  for (const [p, src] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), src);
  }
  return root;
}

describe('tools/check-layout.js (the written boundaries)', () => {
  const made: string[] = [];
  after(() => {
    for (const r of made) rmSync(r, { recursive: true, force: true });
  });
  const breaches = (files: Record<string, string>) => {
    const r = repo(files);
    made.push(r);
    return run(r);
  };

  it('passes on this repository', () => {
    assert.deepEqual(run(), []);
  });

  it('reports two folders of an app that import each other at run time, not through types or specs', () => {
    const cycle = breaches({
      'apps/x/src/a/one.ts': "import { two } from '../b/two.js';\nexport const one = two;\n",
      'apps/x/src/b/two.ts': "import { one } from '../a/one.js';\nexport const two = 2;\n",
    });
    assert.equal(cycle.length, 1);
    assert.match(cycle[0] ?? '', /apps\/x\/src\/a <-> apps\/x\/src\/b/);
    assert.deepEqual(
      breaches({
        'apps/x/src/a/one.ts': "import type { T } from '../b/two.js';\nexport const one = 1;\n",
        'apps/x/src/b/two.ts': "import { one } from '../a/one.js';\nexport type T = number;\n",
        'apps/x/src/b/two.spec.ts': "import { one } from '../a/one.js';\n",
      }),
      [],
    );
  });

  it('counts each admin resource as its own folder', () => {
    const found = breaches({
      'apps/gateway/src/admin/keys/k.ts': "import { m } from '../members/m.js';\nexport const k = m;\n",
      'apps/gateway/src/admin/members/m.ts': "import { k } from '../keys/k.js';\nexport const m = 1;\n",
    });
    assert.equal(found.length, 1);
    assert.match(found[0] ?? '', /admin\/keys <-> apps\/gateway\/src\/admin\/members/);
  });

  it('keeps the inference path out of the admin room (app.module.ts wires it in)', () => {
    const found = breaches({
      'apps/gateway/src/openai/chat.ts': "import { a } from '../admin/access/a.js';\n",
      'apps/gateway/src/app.module.ts': "import { a } from './admin/access/a.js';\n",
      'apps/gateway/src/admin/access/a.ts': 'export const a = 1;\n',
    });
    assert.deepEqual(found, [
      'the inference path imports admin code: apps/gateway/src/openai/chat.ts -> apps/gateway/src/admin/access/a.ts',
    ]);
  });

  it('lets bench/ import apps only by @infer/<app>/public and nothing by a relative path out of bench/', () => {
    const found = breaches({
      'bench/a.ts':
        "import { x } from '../apps/gateway/src/limits/x.js';\nimport { y } from '@infer/gateway';\nimport { z } from '@infer/gateway/public';\nimport { w } from '../test/support/wait-for.js';\n",
    });
    assert.deepEqual(found, [
      'bench imports around the exports: bench/a.ts -> apps/gateway/src/limits/x.ts',
      'bench imports an app other than by @infer/gateway/public: bench/a.ts -> @infer/gateway',
    ]);
  });

  it('refuses a lib that imports an app', () => {
    const found = breaches({ 'libs/k/src/a.ts': "import { s } from '@infer/gateway/public';\n" });
    assert.deepEqual(found, ['a lib imports an app: libs/k/src/a.ts -> @infer/gateway/public']);
  });

  it('keeps the layers of telemetry < rpc < runtime (specs may reach up)', () => {
    const found = breaches({
      'libs/telemetry/src/a.ts': "import { b } from '@infer/rpc';\n",
      'libs/rpc/src/b.ts': "import { c } from '@infer/runtime';\nimport { a } from '@infer/telemetry';\n",
      'libs/rpc/src/b.spec.ts': "import { c } from '@infer/runtime';\n",
      'libs/runtime/src/c.ts': "import { b } from '@infer/rpc';\nimport { a } from '@infer/telemetry';\n",
    });
    assert.deepEqual(found, [
      'a lib imports a higher layer: libs/rpc/src/b.ts -> @infer/runtime',
      'a lib imports a higher layer: libs/telemetry/src/a.ts -> @infer/rpc',
    ]);
  });

  it('names each gateway file with a Nest role for its role (rule 6)', () => {
    const found = breaches({
      'apps/gateway/src/x/things.ts': "@Controller('things')\nexport class Things {}\n",
      'apps/gateway/src/x/helper.ts': '@Injectable()\nexport class Helper {}\n',
      'apps/gateway/src/x/things.controller.ts': "@Controller('things')\nexport class Things {}\n",
      'apps/gateway/src/x/helper.service.ts': '@Injectable()\nexport class Helper {}\n',
      'apps/gateway/src/x/counts.store.ts': '@Injectable()\nexport class Counts {}\n',
      'apps/gateway/src/x/helper.spec.ts': '@Injectable()\nclass Fake {}\n',
    });
    assert.deepEqual(found.sort(), [
      'a gateway @Controller outside a file named for its role: apps/gateway/src/x/things.ts',
      'a gateway @Injectable outside a file named for its role: apps/gateway/src/x/helper.ts',
    ]);
  });
});
