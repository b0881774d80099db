import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type ServiceRequest } from '@infer/contracts';
import type { NatsConnection } from '@nats-io/transport-node';
import { checkEnvelopeSize, joinList } from './collect.js';

const parts = (...arrays: unknown[][]) => arrays.map((a) => Buffer.from(JSON.stringify(a).slice(1, -1)));

describe('collected list replies', () => {
  it('joins the frames into the list field, in order, keeping the other fields and their order', () => {
    const body = joinList(
      { object: 'list', data: [], model: 'm', usage: { prompt_tokens: 3, total_tokens: 3 } },
      'data',
      parts([{ index: 0 }, { index: 1 }], [{ index: 2 }]),
    );
    assert.equal(
      body.toString(),
      '{"object":"list","data":[{"index":0},{"index":1},{"index":2}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}',
    );
    const exact = parts([{ a: 'x,]"' }], [{ b: 2 }]);
    const bytes = exact.reduce((s, p) => s + p.length, 0);
    assert.deepEqual(
      JSON.parse(joinList({ id: 'r', results: [], meta: {} }, 'results', exact, bytes).toString()),
      {
        id: 'r',
        results: [{ a: 'x,]"' }, { b: 2 }],
        meta: {},
      },
    );
  });

  it('makes an empty list from no frames, and refuses an end frame without an object', () => {
    assert.deepEqual(JSON.parse(joinList({ id: 'r', results: [] }, 'results', []).toString()), {
      id: 'r',
      results: [],
    });
    assert.throws(() => joinList(null, 'data', []), ApiError);
    assert.throws(() => joinList([1], 'data', []), ApiError);
  });

  it('refuses with 413 a request that does not fit in one NATS message', () => {
    const nc = { info: { max_payload: 1000 } } as unknown as NatsConnection;
    const env = (n: number) =>
      ({
        requestId: 'r',
        memberId: 'm',
        keyId: 'k',
        model: {},
        body: { input: 'x'.repeat(n) },
        deadline: 0,
        stream: false,
      }) as unknown as ServiceRequest;
    checkEnvelopeSize(nc, env(100));
    assert.throws(
      () => checkEnvelopeSize(nc, env(2000)),
      (e: unknown) => e instanceof ApiError && e.status === 413 && e.code === 'request_too_large',
    );
  });
});
