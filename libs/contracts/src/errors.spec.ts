import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, ErrorCode, ErrorType } from './errors.js';

/** The call-site lines of a stack ("    at f (file:1:2)"). */
const frames = (e: Error): string[] => String(e.stack).split('\n').slice(1);

// Named so that a captured frame would show it.
function refuseHere(status: number): ApiError {
  return new ApiError(status, 'Rate limit reached.', {
    type: ErrorType.rateLimit,
    code: ErrorCode.rateLimit,
    headers: { 'retry-after': '7' },
  });
}

describe('ApiError stacks: answers carry none, faults keep theirs', () => {
  it('an answer (4xx, 503, 524) captures no call-site frames; its stack is the one header line', () => {
    for (const e of [
      refuseHere(429),
      refuseHere(503),
      ApiError.invalid('Missing required parameter: model.', 'model'),
      ApiError.invalidKey(),
      ApiError.modelNotFound('nope'),
      ApiError.timeout(),
      ApiError.fromWire({ status: 503, message: 'down', type: 'server_error', param: null, code: 'x' }),
    ]) {
      assert.deepEqual(frames(e), [], `status ${e.status}`);
      assert.equal(e.stack, `ApiError: ${e.message}`);
    }
  });

  it('a 500 is a fault: it keeps its frames (where it was raised)', () => {
    const e = ApiError.internal();
    assert.ok(frames(e).length > 0);
    assert.match(String(e.stack), /^ApiError: The server had an error/);
    assert.match(frames(ApiError.fromWire({ ...e.toWire() })).join('\n'), /fromWire/);
  });

  it('leaves Error.stackTraceLimit as it was, so that other errors keep their stacks', () => {
    const before = Error.stackTraceLimit;
    try {
      Error.stackTraceLimit = 25;
      refuseHere(429);
      assert.equal(Error.stackTraceLimit, 25);
      ApiError.internal();
      assert.equal(Error.stackTraceLimit, 25);
      const fault = new TypeError('a real bug');
      assert.ok(frames(fault).length > 0);
    } finally {
      Error.stackTraceLimit = before;
    }
  });

  it('is the same answer otherwise: class, name, message, fields, body and wire form', () => {
    const e = refuseHere(429);
    assert.ok(e instanceof ApiError);
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'ApiError');
    assert.equal(String(e), 'ApiError: Rate limit reached.');
    assert.equal(e.status, 429);
    assert.deepEqual(e.headers, { 'retry-after': '7' });
    assert.deepEqual(e.toBody(), {
      error: {
        message: 'Rate limit reached.',
        type: 'rate_limit_error',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    // Its headers travel with it over NATS (a service's 503 overloaded keeps its Retry-After).
    assert.deepEqual(e.toWire(), { status: 429, ...e.toBody().error, headers: { 'retry-after': '7' } });
    assert.deepEqual(ApiError.fromWire(e.toWire()).headers, { 'retry-after': '7' });
    assert.equal('headers' in ApiError.internal().toWire(), false, 'no headers: none on the wire');
  });
});
