import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildOpenApiDocument } from './openapi.js';

// biome-ignore lint/suspicious/noExplicitAny: walking a JSON document
type Json = Record<string, any>;

describe('OpenAPI: the admin API of the operator console', () => {
  const doc = buildOpenApiDocument() as Json;

  it('documents every console route with its role, credentials and error envelope', () => {
    for (const [path, method] of [
      ['/admin/session', 'post'],
      ['/admin/members', 'get'],
      ['/admin/members', 'post'],
      ['/admin/members/{id}', 'patch'],
      ['/admin/members/{id}/keys', 'post'],
      ['/admin/keys/{key}/revoke', 'post'],
      ['/admin/models/{id}', 'patch'],
      ['/admin/audit', 'get'],
      ['/admin/operators/{id}', 'patch'],
      ['/admin/usage/daily', 'get'],
      ['/admin/queues/{queue}/jobs/{id}/retry', 'post'],
      ['/admin/queues/{queue}/jobs/{id}', 'get'],
      ['/admin/queues/{queue}/pause', 'post'],
      ['/admin/queues/{queue}/resume', 'post'],
      ['/admin/keys', 'get'],
      ['/admin/keys/{key}/rotate', 'post'],
      ['/admin/members/{id}/quotas', 'get'],
      ['/admin/overview', 'get'],
      ['/admin/overview/stream', 'get'],
      ['/admin/logs', 'get'],
      ['/admin/logs/{requestId}', 'get'],
      ['/admin/members/{id}/refusals', 'get'],
    ] as const) {
      const op = doc.paths[path]?.[method];
      assert.ok(op, `${method} ${path}`);
      assert.equal(op.responses['400'].content['application/json'].schema.$ref, '#/components/schemas/Error');
    }
    const create = doc.paths['/admin/members'].post;
    assert.deepEqual(create.security, [{ adminToken: [] }, { consoleSession: [] }]);
    assert.match(create.description, /admin or above.*X-CSRF-Token/);
    assert.ok(create.responses['201']);
    assert.equal(
      create.requestBody.content['application/json'].schema.$ref,
      '#/components/schemas/CreateMemberRequest',
    );
    assert.deepEqual(doc.paths['/admin/session'].post.security, []);
    assert.equal(doc.components.securitySchemes.consoleSession.in, 'cookie');
    assert.match(doc.paths['/admin/queues/{queue}/pause'].post.description, /admin or above.*X-CSRF-Token/);
    assert.equal(
      doc.paths['/admin/overview'].get.responses['200'].content['application/json'].schema.$ref,
      '#/components/schemas/Overview',
    );
    assert.deepEqual(
      doc.paths['/admin/keys'].get.parameters.map((p: Json) => p.name),
      ['q', 'member', 'status', 'sort', 'after', 'limit'],
    );
    // A member's batches: paged with after / next_after, readable by viewers.
    const batches = doc.paths['/admin/members/{memberId}/batches'].get;
    assert.deepEqual(
      batches.parameters.filter((p: Json) => p.in === 'query').map((p: Json) => p.name),
      ['status', 'after', 'limit'],
    );
    assert.match(batches.description, /viewer/);
    const list = doc.components.schemas.AdminBatchList;
    assert.ok(list.required.includes('next_after'));
    assert.ok(list.properties.next_after);
    // The public API is unchanged next to it.
    assert.ok(doc.paths['/v1/models'].get);
  });
});
