import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { decodeFailure, encodeFailure, failedChildId } from './jobs.js';

describe('job failures', () => {
  it('carry an ApiError through failedReason', () => {
    const e = decodeFailure(encodeFailure(ApiError.invalid('bad audio', 'file')));
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 400);
    assert.equal(e.param, 'file');
    assert.equal(decodeFailure('TypeError: x is undefined'), null);
    assert.equal(decodeFailure('ApiError:{not json'), null);
    assert.equal(decodeFailure(undefined), null);
  });

  it("find the child that failed a parent in BullMQ's reason", () => {
    assert.equal(failedChildId('child infer:bull:audio-transcriptions:tx-1-seg-2 failed'), 'tx-1-seg-2');
    assert.equal(failedChildId('something else'), null);
  });
});
