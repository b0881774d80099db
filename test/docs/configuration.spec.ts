/**
 * docs/configuration.md cannot drift from the config schemas: it must be what tools/config-doc.ts
 * writes from them, every schema field must carry a description, and every variable the apps' and
 * libs' sources read outside a schema must be on the page.
 * After changing a schema: node --conditions=source --import ./tools/ts-register.js tools/config-doc.ts
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { z } from 'zod';
import {
  CONFIGURATION_DOC,
  documentedNames,
  envNamesReadInSource,
  REPO_ROOT,
  renderConfigurationDoc,
  rowOf,
  undescribed,
} from '../../tools/config-doc.js';

describe('docs/configuration.md', () => {
  it('is what tools/config-doc.ts writes from the schemas (regenerate it after a schema change)', () => {
    const committed = readFileSync(join(REPO_ROOT, CONFIGURATION_DOC), 'utf8');
    const generated = renderConfigurationDoc();
    if (committed !== generated) {
      const a = committed.split('\n');
      const b = generated.split('\n');
      const i = a.findIndex((line, n) => line !== b[n]);
      assert.fail(
        `${CONFIGURATION_DOC} is stale (first difference at line ${i + 1}):\n  committed: ${a[i]}\n  generated: ${b[i]}\n` +
          'run: node --conditions=source --import ./tools/ts-register.js tools/config-doc.ts',
      );
    }
  });

  it('gives every schema field a meaning (.describe() on the field)', () => {
    assert.deepEqual(undescribed(), []);
  });

  it('lists every variable the sources read outside the schemas', () => {
    const read = envNamesReadInSource();
    // The scan itself works: it finds variables read in three different ways.
    for (const name of [
      'OTEL_BSP_SCHEDULE_DELAY',
      'INFER_CACHE_DIR',
      'USAGE_STREAM_REPLICAS',
      'CATALOG_FILE',
    ]) {
      assert.ok(read.has(name), `the source scan did not find ${name}`);
    }
    const documented = documentedNames();
    assert.deepEqual(
      [...read].filter((n) => !documented.has(n)).sort(),
      [],
      'variables read in apps/ or libs/ but missing from tools/config-doc.ts',
    );
  });

  it('documents the timeouts that once appeared nowhere', () => {
    const page = readFileSync(join(REPO_ROOT, CONFIGURATION_DOC), 'utf8');
    for (const name of ['REQUEST_TIMEOUT_MS', 'IDLE_TIMEOUT_MS', 'BODY_LIMIT_BYTES']) {
      assert.match(page, new RegExp(`\\| \`${name}\` \\| integer, >= \\d+ \\| \`\\d+\` \\| \\S`));
    }
  });

  it('reads type, default and meaning from a field', () => {
    const envInt = z.coerce.number().int().min(1).default(5).pipe(z.number().max(9));
    assert.deepEqual(rowOf('N', envInt.describe('a count')), {
      name: 'N',
      type: 'integer, 1 to 9',
      default: '`5`',
      meaning: 'a count',
    });
    const list = z
      .string()
      .default('a,b')
      .transform((s) => s.split(','));
    assert.equal(rowOf('L', list).type, 'comma-separated list');
    assert.equal(rowOf('L', list).default, '`a,b`');
    assert.equal(rowOf('L', list).meaning, undefined);
    const secret = z.string().min(32).optional().describe('s');
    assert.deepEqual(rowOf('S', secret), {
      name: 'S',
      type: 'string, >= 32 characters',
      default: 'unset',
      meaning: 's',
    });
    const dynamic = z.string().default(String(process.pid)).meta({ description: 'd', docDefault: 'pid' });
    assert.equal(rowOf('D', dynamic).default, 'pid');
  });
});
