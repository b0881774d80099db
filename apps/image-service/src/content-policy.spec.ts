import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { ConfigError } from '@infer/runtime';
import { ContentPolicy } from './content-policy.js';

const dir = await mkdtemp(join(tmpdir(), 'policy-'));
after(() => rm(dir, { recursive: true, force: true }));

function blocked(policy: ContentPolicy, prompt: string): boolean {
  try {
    policy.check(prompt);
    return false;
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'content_policy_violation');
    assert.equal(e.param, 'prompt');
    return true;
  }
}

describe('ContentPolicy', () => {
  it('blocks listed terms as whole words, whatever the case and accents', async () => {
    const file = join(dir, 'p.yaml');
    await writeFile(
      file,
      'blocked_terms: [gore, "blood bath", café]\nblocked_patterns: ["\\\\bkill(ing)?\\\\s+\\\\w+"]\n',
    );
    const p = ContentPolicy.load(file);
    assert.equal(p.size, 4);
    assert.ok(blocked(p, 'A GORE scene'));
    assert.ok(blocked(p, 'a blood   bath at noon'));
    assert.ok(blocked(p, 'a cozy CAFE'));
    assert.ok(blocked(p, 'killing time'));
    assert.ok(!blocked(p, 'Gorex the friendly robot'), 'not a whole word');
    assert.ok(!blocked(p, 'a bloody sunset'));
    assert.ok(!blocked(p, 'a red fox in the snow'));
  });

  it('reads JSON too and uses the operator message', async () => {
    const file = join(dir, 'p.json');
    await writeFile(file, JSON.stringify({ blocked_terms: ['forbidden'], message: 'Nope.' }));
    const p = ContentPolicy.load(file);
    assert.throws(() => p.check('something forbidden'), { message: 'Nope.' });
  });

  it('lets everything through without a file', () => {
    assert.ok(!blocked(ContentPolicy.load(undefined), 'anything at all'));
  });

  it('refuses to start with a missing file, a bad shape or a bad regex', async () => {
    assert.throws(() => ContentPolicy.load(join(dir, 'missing.yaml')), ConfigError);
    const shape = join(dir, 'shape.yaml');
    await writeFile(shape, 'blocked_terms: nope\n');
    assert.throws(() => ContentPolicy.load(shape), /blocked_terms/);
    const re = join(dir, 're.yaml');
    await writeFile(re, 'blocked_patterns: ["(unclosed"]\n');
    assert.throws(() => ContentPolicy.load(re), /blocked_patterns/);
  });
});
