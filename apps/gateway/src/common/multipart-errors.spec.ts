import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { multipartError, partName } from './multipart-errors.js';

describe('multipartError', () => {
  it('turns every parser failure into a 400, never a 500', () => {
    for (const e of [
      new Error('Unexpected end of form'),
      new Error('Malformed part header'),
      Object.assign(new Error('Multipart: Boundary not found'), {}),
      Object.assign(new Error('the request is not multipart'), {
        code: 'FST_INVALID_MULTIPART_CONTENT_TYPE',
      }),
      new TypeError("Cannot read properties of undefined (reading 'endsWith')"),
    ]) {
      const a = multipartError(e);
      assert.equal(a.status, 400, e.message);
      assert.equal(a.code, 'invalid_request_error');
    }
  });

  it('names the file field for too many files, and keeps ApiErrors', () => {
    const many = multipartError(Object.assign(new Error('x'), { code: 'FST_FILES_LIMIT' }), {
      filesParam: 'image',
      maxFiles: 4,
    });
    assert.equal(many.param, 'image');
    assert.match(many.message, /at most 4/);
    const own = ApiError.invalid('mine', 'mask');
    assert.equal(multipartError(own), own);
  });

  it('refuses a part without a name', () => {
    assert.equal(partName('prompt'), 'prompt');
    for (const n of [undefined, '', null]) assert.throws(() => partName(n), { status: 400 });
  });
});
