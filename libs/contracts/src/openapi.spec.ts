import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUDIO_CONTENT_TYPES } from './audio.js';
import { buildOpenApiDocument } from './openapi.js';

// biome-ignore lint/suspicious/noExplicitAny: the test walks an untyped JSON document
type Json = Record<string, any>;

/** Every path of the spec with its method and the error statuses the spec lists for it. */
/** The spec's statuses per path, plus what the routes also return (402/404/429 on every model route). */
const MODEL = [200, 400, 401, 402, 404, 429];
const SPEC_PATHS: Record<string, { method: 'get' | 'post'; statuses: number[] }> = {
  '/v1/models': { method: 'get', statuses: [200, 401] },
  '/v1/chat/completions': { method: 'post', statuses: MODEL },
  '/v1/completions': { method: 'post', statuses: MODEL },
  '/v1/responses': { method: 'post', statuses: MODEL },
  '/v1/embeddings': { method: 'post', statuses: MODEL },
  '/v1/rerank': { method: 'post', statuses: MODEL },
  '/v2/rerank': { method: 'post', statuses: MODEL },
  '/v1/audio/speech': { method: 'post', statuses: MODEL },
  '/v1/audio/transcriptions': { method: 'post', statuses: [...MODEL, 524] },
  '/v1/images/generations': { method: 'post', statuses: [...MODEL, 403] },
  '/v1/images/edits': { method: 'post', statuses: [...MODEL, 403] },
  '/v1/search': { method: 'post', statuses: [200, 400, 401, 429, 503] },
  '/mcp': { method: 'post', statuses: [200, 401, 429] },
};

function collectRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const v of node) collectRefs(v, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else collectRefs(v, out);
    }
  }
  return out;
}

function resolvePointer(doc: Json, ref: string): unknown {
  assert.ok(ref.startsWith('#/'), `only local refs expected, got ${ref}`);
  let cur: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!cur || typeof cur !== 'object' || !(key in cur)) return undefined;
    cur = (cur as Json)[key];
  }
  return cur;
}

const op = (doc: Json, path: string): Json => {
  const spec = SPEC_PATHS[path];
  assert.ok(spec);
  return doc.paths[path][spec.method];
};
const schemaOf = (doc: Json, ref: Json): Json => resolvePointer(doc, ref.$ref) as Json;

describe('buildOpenApiDocument', () => {
  const doc = buildOpenApiDocument() as Json;

  it('is an OpenAPI 3.1.0 document, version 1.0.0, with a title', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1.0.0');
    assert.equal(typeof doc.info.title, 'string');
    assert.ok(doc.info.title.length > 0);
  });

  it('has every listed path with its method', () => {
    for (const [path, { method }] of Object.entries(SPEC_PATHS)) {
      assert.ok(doc.paths[path], `missing path ${path}`);
      assert.ok(doc.paths[path][method], `missing ${method.toUpperCase()} ${path}`);
      assert.equal(typeof doc.paths[path][method].operationId, 'string');
    }
    const ids = Object.values(doc.paths as Record<string, Record<string, Json>>).flatMap((p) =>
      Object.values(p).map((o) => o.operationId),
    );
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  });

  it('resolves every $ref, and every ref points into components.schemas', () => {
    const refs = collectRefs(doc);
    assert.ok(refs.length > 50);
    for (const ref of refs) {
      assert.match(ref, /^#\/components\/schemas\/[A-Za-z0-9_.-]+$/);
      assert.ok(resolvePointer(doc, ref) !== undefined, `unresolved ${ref}`);
    }
    const text = JSON.stringify(doc);
    assert.equal(text.includes('$defs'), false);
    assert.equal(text.includes('__shared'), false);
  });

  it('lists the spec statuses of each path, errors with the Error schema', () => {
    for (const [path, { statuses }] of Object.entries(SPEC_PATHS)) {
      const responses = op(doc, path).responses as Json;
      const listed = Object.keys(responses)
        .map(Number)
        .filter((s) => s !== 202);
      assert.deepEqual(listed.sort(), [...statuses].sort(), path);
      for (const s of statuses.filter((x) => x >= 400)) {
        assert.equal(
          responses[s].content['application/json'].schema.$ref,
          '#/components/schemas/Error',
          `${path} ${s}`,
        );
      }
    }
    assert.equal(typeof op(doc, '/v1/search').responses[429].headers['Retry-After'], 'object');
  });

  it('has the Error component with message, type, param and code', () => {
    const err = doc.components.schemas.Error;
    assert.deepEqual(err.required, ['error']);
    const inner = err.properties.error;
    assert.deepEqual(Object.keys(inner.properties).sort(), ['code', 'message', 'param', 'type']);
  });

  it('declares bearer authentication for every operation', () => {
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      description: 'Authorization: Bearer <API_KEY>',
    });
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
  });

  it('uses named components for requests and responses', () => {
    const body = (path: string) => op(doc, path).requestBody.content['application/json'].schema;
    const ok = (path: string) => op(doc, path).responses[200].content['application/json'].schema;
    assert.equal(body('/v1/chat/completions').$ref, '#/components/schemas/ChatCompletionRequest');
    assert.equal(ok('/v1/chat/completions').$ref, '#/components/schemas/ChatCompletion');
    assert.equal(body('/v1/completions').$ref, '#/components/schemas/CompletionRequest');
    assert.equal(body('/v1/responses').$ref, '#/components/schemas/ResponseRequest');
    assert.equal(ok('/v1/responses').$ref, '#/components/schemas/ResponseObject');
    assert.equal(body('/v1/embeddings').$ref, '#/components/schemas/EmbeddingRequest');
    assert.equal(ok('/v1/embeddings').$ref, '#/components/schemas/EmbeddingList');
    assert.equal(body('/v2/rerank').$ref, '#/components/schemas/RerankRequest');
    assert.equal(ok('/v1/rerank').$ref, '#/components/schemas/RerankResponse');
    assert.equal(body('/v1/images/generations').$ref, '#/components/schemas/ImageGenerationRequest');
    assert.equal(ok('/v1/images/edits').$ref, '#/components/schemas/ImageResponse');
    assert.equal(body('/v1/search').$ref, '#/components/schemas/SearchRequest');
    assert.equal(ok('/v1/search').$ref, '#/components/schemas/SearchResponse');
    assert.equal(body('/mcp').$ref, '#/components/schemas/JsonRpcMessage');
    assert.equal(ok('/v1/models').$ref, '#/components/schemas/ModelList');
    for (const id of ['Message', 'Tool', 'ToolCall', 'Usage', 'ResponseStreamEvent', 'Transcription']) {
      assert.ok(doc.components.schemas[id], id);
    }
  });

  it('describes requests on their input side and responses on their output side', () => {
    const schemas = doc.components.schemas;
    // defaults make a field optional on input ...
    assert.deepEqual(schemas.ImageGenerationRequest.required, ['prompt']);
    assert.equal(schemas.ImageGenerationRequest.properties.n.default, 1);
    assert.equal(schemas.SearchRequest.properties.count.default, 5);
    assert.deepEqual(schemas.EmbeddingRequest.required.sort(), ['input', 'model']);
    // ... and responses list what they always carry
    assert.ok(schemas.ChatCompletion.required.includes('usage'));
    assert.ok(schemas.Completion.required.includes('choices'));
    // requests stay open to extra fields (SDKs send more than the spec lists)
    for (const id of [
      'ChatCompletionRequest',
      'CompletionRequest',
      'EmbeddingRequest',
      'ImageGenerationRequest',
    ]) {
      assert.notEqual(schemas[id].additionalProperties, false, id);
    }
  });

  it('lists the statuses the model routes return (limits, unknown model, tier), 429 with Retry-After', () => {
    for (const path of [
      '/v1/chat/completions',
      '/v1/responses',
      '/v1/embeddings',
      '/v1/audio/transcriptions',
    ]) {
      const statuses = Object.keys(op(doc, path).responses);
      for (const s of ['400', '401', '402', '404', '429']) assert.ok(statuses.includes(s), `${path} ${s}`);
      assert.ok(op(doc, path).responses[429].headers['Retry-After'], path);
    }
    assert.ok(op(doc, '/v1/images/generations').responses[403]);
    assert.ok(op(doc, '/v1/audio/transcriptions').responses[524]);
  });

  it('streams chat, completions and responses as text/event-stream', () => {
    const events = {
      '/v1/chat/completions': 'ChatCompletionChunk',
      '/v1/completions': 'CompletionChunk',
      '/v1/responses': 'ResponseStreamEvent',
    };
    for (const [path, id] of Object.entries(events)) {
      const content = op(doc, path).responses[200].content;
      assert.ok(content['application/json'], path);
      assert.equal(content['text/event-stream'].schema.$ref, `#/components/schemas/${id}`, path);
    }
    for (const path of ['/v1/embeddings', '/v1/images/generations', '/v1/search']) {
      assert.equal(op(doc, path).responses[200].content['text/event-stream'], undefined, path);
    }
  });

  it('returns binary audio per content type on /v1/audio/speech', () => {
    const content = op(doc, '/v1/audio/speech').responses[200].content as Json;
    assert.deepEqual(Object.keys(content).sort(), Object.values(AUDIO_CONTENT_TYPES).sort());
    for (const c of Object.values(content)) assert.equal(c.schema.format, 'binary');
  });

  it('takes multipart/form-data on transcriptions and image edits, with their file parts', () => {
    const tr = op(doc, '/v1/audio/transcriptions').requestBody.content['multipart/form-data'].schema;
    assert.equal(tr.allOf[0].$ref, '#/components/schemas/TranscriptionRequest');
    assert.deepEqual(tr.allOf[1].required, ['file']);
    assert.equal(tr.allOf[1].properties.file.format, 'binary');
    assert.ok(schemaOf(doc, tr.allOf[0]).properties.timestamp_granularities);
    const ed = op(doc, '/v1/images/edits').requestBody.content['multipart/form-data'].schema;
    assert.equal(ed.allOf[0].$ref, '#/components/schemas/ImageEditRequest');
    assert.deepEqual(ed.allOf[1].required, ['image']);
    assert.equal(op(doc, '/v1/audio/transcriptions').requestBody.content['application/json'], undefined);
  });

  it('is pure: a fresh, equal, JSON-safe document on every call', () => {
    const a = buildOpenApiDocument() as Json;
    const b = buildOpenApiDocument() as Json;
    assert.notEqual(a, b);
    assert.deepEqual(a, b);
    a.components.schemas.Error = {};
    assert.notDeepEqual(buildOpenApiDocument(), a);
    assert.deepEqual(JSON.parse(JSON.stringify(b)), b);
  });

  it('uses the given server URL', () => {
    const d = buildOpenApiDocument({ serverUrl: 'https://api.example.com' }) as Json;
    assert.deepEqual(d.servers, [{ url: 'https://api.example.com' }]);
  });
});
