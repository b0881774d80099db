/**
 * The API reference is the repository's own, generated from libs/contracts: docs/api-reference.md must be
 * what tools/api-reference.ts writes from the OpenAPI document, it must cover every path and schema of
 * that document, and the real gateway serves the same reference as a self-contained page at GET /docs.
 * After changing a contract: node --conditions=source --import ./tools/ts-register.js tools/api-reference.ts
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildOpenApiDocument, referenceModel, renderReferenceHtml, typeText } from '@infer/contracts';
import { API_REFERENCE_DOC, REPO_ROOT, renderApiReference } from '../../tools/api-reference.js';
import { type Stack, startStack } from '../integration/harness.js';

type Doc = {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown> };
};
const doc = buildOpenApiDocument() as unknown as Doc;

describe('docs/api-reference.md', () => {
  it('is what tools/api-reference.ts writes from the contracts (regenerate it after a contract change)', () => {
    const committed = readFileSync(join(REPO_ROOT, API_REFERENCE_DOC), 'utf8');
    const generated = renderApiReference();
    if (committed !== generated) {
      const a = committed.split('\n');
      const b = generated.split('\n');
      const i = a.findIndex((line, n) => line !== b[n]);
      assert.fail(
        `${API_REFERENCE_DOC} is stale (first difference at line ${i + 1}):\n  committed: ${a[i]}\n  generated: ${b[i]}\n` +
          'run: node --conditions=source --import ./tools/ts-register.js tools/api-reference.ts',
      );
    }
  });

  it('has a section for every operation and every schema of the OpenAPI document', () => {
    const page = renderApiReference();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) {
        assert.ok(page.includes(`\n### ${method.toUpperCase()} ${path}\n`), `${method} ${path}`);
      }
    }
    for (const name of Object.keys(doc.components.schemas)) {
      assert.ok(page.includes(`\n### ${name}\n`), name);
    }
  });

  it('lists the fields of a request with their types, bounds and links', () => {
    const chat = referenceModel(doc as never).schemas.find((s) => s.name === 'ChatCompletionRequest');
    const rows = chat?.blocks[0]?.rows ?? [];
    const row = (name: string) => rows.find((r) => r.name === name);
    assert.equal(row('model')?.required, true);
    assert.equal(row('temperature')?.type, 'number or null');
    assert.equal(row('temperature')?.notes, '0 to 2');
    assert.equal(row('stream_options.include_usage')?.type, 'boolean');
    const page = renderApiReference();
    assert.match(page, /\| messages \| array of \[Message\]\(#message\) \| yes \| at least 1 items \|/);
    // A union schema is one block per member, told apart by its constant field.
    const message = referenceModel(doc as never).schemas.find((s) => s.name === 'Message');
    assert.ok(message?.blocks.some((b) => b.label === 'one of: role: "tool"'));
  });

  it('renders JSON Schema types as short expressions', () => {
    assert.equal(typeText({ anyOf: [{ type: 'integer' }, { type: 'null' }] }), 'integer or null');
    assert.equal(
      typeText({ type: 'array', items: { $ref: '#/components/schemas/Tool' } }),
      'array of \uE000Tool\uE001',
    );
    assert.equal(typeText({ type: 'string', enum: ['a', 'b'] }), '"a" \\| "b"');
    assert.equal(typeText({ type: ['boolean', 'null'] }), 'boolean or null');
  });
});

describe('GET /docs (the gateway)', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.close();
  });

  it('serves the reference as one self-contained HTML page, without a key', async () => {
    const res = await fetch(`${stack.url}/docs`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const html = await res.text();
    assert.equal(html, renderReferenceHtml(buildOpenApiDocument()));
    assert.match(html, /^<!doctype html>/);
    for (const path of ['/v1/chat/completions', '/v1/embeddings', '/mcp', '/admin/members']) {
      assert.ok(html.includes(`</span> ${path}</h3>`), path);
    }
    // Nothing is loaded from elsewhere: no script, no external stylesheet, image or link target.
    assert.doesNotMatch(html, /<script|<link|src=|href="(?!#|\/openapi\.json")/);
    // Text is escaped: the bearer scheme's placeholder is shown, not parsed as a tag.
    assert.ok(html.includes('Bearer &lt;API_KEY&gt;'));
    assert.equal(await (await fetch(`${stack.url}/docs`)).text(), html);
  });
});
