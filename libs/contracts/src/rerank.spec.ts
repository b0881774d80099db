import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RerankRequestSchema, RerankResponseSchema, rerankDocumentText } from './rerank.js';
import { rejectParam } from './testing/reject.js';
import { parseOrThrow } from './validate.js';

const base = { model: 'rerank', query: 'capital of France', documents: ['Paris is the capital', 'Berlin'] };

describe('RerankRequestSchema', () => {
  it('accepts strings, return_documents defaults to true, top_n optional', () => {
    const r = parseOrThrow(RerankRequestSchema, base);
    assert.equal(r.return_documents, true);
    assert.equal(r.top_n, undefined);
    const r2 = parseOrThrow(RerankRequestSchema, { ...base, top_n: 1, return_documents: false });
    assert.equal(r2.top_n, 1);
    assert.equal(r2.return_documents, false);
  });

  it('accepts {text} documents as Cohere clients send them, without normalising', () => {
    const r = parseOrThrow(RerankRequestSchema, { ...base, documents: [{ text: 'a' }, 'b'] });
    assert.deepEqual(r.documents, [{ text: 'a' }, 'b']);
    assert.deepEqual(r.documents.map(rerankDocumentText), ['a', 'b']);
  });

  it('names the offending field', () => {
    assert.equal(rejectParam(RerankRequestSchema, { ...base, query: '' }), 'query');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, query: undefined }), 'query');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, documents: [] }), 'documents');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, documents: undefined }), 'documents');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, documents: 'Paris' }), 'documents');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, documents: ['a', 5] }), 'documents[1]');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, documents: [{}] }), 'documents[0].text');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, top_n: 0 }), 'top_n');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, top_n: 1.5 }), 'top_n');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, return_documents: 'yes' }), 'return_documents');
    assert.equal(rejectParam(RerankRequestSchema, { ...base, model: '' }), 'model');
  });
});

describe('RerankResponseSchema', () => {
  const res = {
    id: 'rr_1',
    results: [
      { index: 0, relevance_score: 0.98, document: { text: 'Paris is the capital' } },
      { index: 1, relevance_score: 0.01 },
    ],
    meta: { billed_units: { total_tokens: 12 }, tokens: { input_tokens: 12 } },
  };
  it('parses results with and without documents', () => {
    assert.equal(RerankResponseSchema.parse(res).results.length, 2);
  });
  it('keeps relevance_score within [0, 1]', () => {
    const bad = { ...res, results: [{ index: 0, relevance_score: 1.2 }] };
    assert.equal(RerankResponseSchema.safeParse(bad).success, false);
    const neg = { ...res, results: [{ index: 0, relevance_score: -0.1 }] };
    assert.equal(RerankResponseSchema.safeParse(neg).success, false);
  });
  it('requires meta.billed_units and meta.tokens', () => {
    assert.equal(
      RerankResponseSchema.safeParse({ ...res, meta: { billed_units: { total_tokens: 1 } } }).success,
      false,
    );
  });
});
