import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failureOf, retryable } from './queue-jobs.service.js';

const wire = (status: number, message: string, code: string | null) =>
  `ApiError:${JSON.stringify({ status, message, type: 'invalid_request_error', param: null, code })}`;

describe('a failed job in words, and whether a retry can succeed', () => {
  it("reads a worker's API error as its message, code and status; anything else as a sentence", () => {
    assert.deepEqual(failureOf(wire(400, 'The audio file could not be decoded', 'invalid_audio')), {
      message: 'The audio file could not be decoded.',
      code: 'invalid_audio',
      status: 400,
    });
    assert.deepEqual(failureOf('connect ECONNREFUSED 127.0.0.1:8080'), {
      message: 'Connect ECONNREFUSED 127.0.0.1:8080.',
      code: null,
      status: null,
    });
    assert.deepEqual(failureOf('ApiError:{not json'), {
      message: 'ApiError:{not json.',
      code: null,
      status: null,
    });
    assert.equal(failureOf(undefined), null);
  });

  it('a final failure (UnrecoverableError, a client error, a timeout) cannot succeed on a retry', () => {
    assert.equal(retryable({ failedReason: wire(503, 'Engine down', null), stacktrace: [] }, 'failed'), true);
    assert.equal(retryable({ failedReason: 'boom', stacktrace: ['Error: boom\n    at x'] }, 'failed'), true);
    assert.equal(
      retryable({ failedReason: wire(400, 'Bad audio', 'invalid_audio'), stacktrace: [] }, 'failed'),
      false,
    );
    assert.equal(
      retryable({ failedReason: wire(524, 'Timed out', 'timeout'), stacktrace: [] }, 'failed'),
      false,
    );
    assert.equal(
      retryable({ failedReason: 'x', stacktrace: ['UnrecoverableError: x\n    at y'] }, 'failed'),
      false,
    );
    assert.equal(
      retryable({ failedReason: wire(503, 'Engine down', null), stacktrace: [] }, 'waiting'),
      false,
    );
  });
});
