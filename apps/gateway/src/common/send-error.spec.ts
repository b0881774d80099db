import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, ErrorCode, ErrorType } from '@infer/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { anthropicShaped, errorCodeOf, sendError } from './send-error.js';

function fakes(url = '/v1/chat/completions', headers: Record<string, string> = {}) {
  const logged: Array<{ obj: { err?: unknown }; msg: string }> = [];
  const req = {
    url,
    headers,
    id: 'req_1',
    raw: {},
    log: { error: (obj: { err?: unknown }, msg: string) => logged.push({ obj, msg }) },
  };
  const reply = {
    sent: false,
    raw: { headersSent: false, writableEnded: false, end() {} },
    status: 0,
    headers: {} as Record<string, string>,
    body: undefined as unknown,
    header(k: string, v: string) {
      this.headers[k] = v;
      return this;
    },
    code(s: number) {
      this.status = s;
      return this;
    },
    type(t: string) {
      this.headers['content-type'] = t;
      return this;
    },
    send(b: unknown) {
      this.body = b;
      return this;
    },
  };
  return {
    req: req as unknown as FastifyRequest,
    reply: reply as unknown as FastifyReply & typeof reply,
    logged,
  };
}

describe('sendError: answers are not logged as faults, faults are logged with their stacks', () => {
  it('a refusal (429) is answered as it is, with its headers, and logs nothing', () => {
    const { req, reply, logged } = fakes();
    const refusal = new ApiError(429, 'Rate limit reached.', {
      type: ErrorType.rateLimit,
      code: ErrorCode.rateLimit,
      headers: { 'retry-after': '3' },
    });
    sendError(req, reply, refusal);
    assert.equal(reply.status, 429);
    assert.equal(reply.headers['retry-after'], '3');
    assert.deepEqual(reply.body, refusal.toBody());
    assert.equal(errorCodeOf(req), 'rate_limit_exceeded');
    assert.equal(logged.length, 0);
  });

  it('a 503 (no service answers) is answered without a log line and carries no stack frames', () => {
    const { req, reply, logged } = fakes();
    const e = new ApiError(503, 'The model service is not available right now; retry later.', {
      type: 'server_error',
      code: 'service_unavailable',
    });
    sendError(req, reply, e);
    assert.equal(reply.status, 503);
    assert.equal(logged.length, 0);
    assert.equal(String(e.stack).includes('\n'), false);
  });

  it('an unexpected exception becomes a clean 500 and is logged with its own stack', () => {
    const { req, reply, logged } = fakes();
    const bug = new TypeError("Cannot read properties of undefined (reading 'x')");
    sendError(req, reply, bug);
    assert.equal(reply.status, 500);
    assert.deepEqual(reply.body, ApiError.internal().toBody());
    assert.equal(logged.length, 1);
    assert.equal(logged[0]?.msg, 'request failed');
    assert.equal(logged[0]?.obj.err, bug);
    assert.match(String(bug.stack), /\n\s+at /);
  });

  it('a 500 ApiError raised by our code is logged with the frames of where it was raised', () => {
    const { req, reply, logged } = fakes();
    const lost = ApiError.internal('The result was lost on its way from the model service; retry.');
    sendError(req, reply, lost);
    assert.equal(reply.status, 500);
    assert.equal(logged.length, 1);
    assert.match(String((logged[0]?.obj.err as Error | undefined)?.stack), /\n\s+at /);
  });

  it("the Messages front door answers in Anthropic's shape, with request-id; 503 is Anthropic's 529", () => {
    const refusal = new ApiError(429, 'Rate limit reached: 60 requests per minute (rpm_limit).', {
      type: ErrorType.rateLimit,
      code: ErrorCode.rateLimit,
      headers: { 'retry-after': '3' },
    });
    const a = fakes('/v1/messages?beta=true');
    sendError(a.req, a.reply, refusal);
    assert.equal(a.reply.status, 429);
    assert.equal(a.reply.headers['retry-after'], '3');
    assert.equal(a.reply.headers['request-id'], 'req_1');
    assert.deepEqual(a.reply.body, {
      type: 'error',
      error: { type: 'rate_limit_error', message: refusal.message },
      request_id: 'req_1',
    });
    const b = fakes('/v1/messages/count_tokens');
    sendError(b.req, b.reply, new ApiError(503, 'busy', { code: 'service_unavailable' }));
    assert.equal(b.reply.status, 529);
    assert.equal((b.reply.body as { error: { type: string } }).error.type, 'overloaded_error');
    assert.equal(anthropicShaped({ url: '/v1/messagesX', headers: {} }), false);
    assert.equal(anthropicShaped({ url: '/v1/messages', headers: {} }), true);
    assert.equal(anthropicShaped({ url: '/v1/models', headers: {} }), false);
    assert.equal(
      anthropicShaped({ url: '/v1/models', headers: { 'anthropic-version': '2023-06-01' } }),
      true,
    );
  });
});
