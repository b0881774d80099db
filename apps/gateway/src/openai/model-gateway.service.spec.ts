import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { ApiError, type EndFrame } from '@infer/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ModelGateway } from './model-gateway.service.js';
import type { ModelRoute } from './routes.js';

const unaryRoute: ModelRoute = {
  endpoint: '/v1/audio/speech',
  subject: 'test.unary',
  schema: z.object({ model: z.string().optional(), stream: z.boolean().optional() }),
  kinds: ['tts'],
  streamable: false,
};
const collectedRoute: ModelRoute = { ...unaryRoute, endpoint: '/v1/embeddings', collect: { field: 'data' } };

/** A service that answers a cancel the way one that throws its abort reason does: a 500 error frame. */
function fakeRpc() {
  const pending = new Map<string, (e: unknown) => void>();
  return {
    cancelled: [] as string[],
    call(_subject: string, env: { requestId: string }): Promise<EndFrame> {
      return new Promise((_res, rej) => pending.set(env.requestId, rej));
    },
    stream(_subject: string, env: { requestId: string }) {
      let fail: (e: unknown) => void = () => undefined;
      const failed = new Promise<never>((_res, rej) => {
        fail = rej;
      });
      failed.catch(() => undefined);
      pending.set(env.requestId, fail);
      return {
        end: failed,
        partialUsage: null,
        cancel: () => fail(ApiError.internal()),
        [Symbol.asyncIterator]: () => ({ next: () => failed }),
      };
    },
    cancel(requestId: string) {
      this.cancelled.push(requestId);
      pending.get(requestId)?.(ApiError.internal());
    },
  };
}

function gatewayWith(rpc: ReturnType<typeof fakeRpc>) {
  const settled: number[] = [];
  const none = () => undefined;
  const gw = new ModelGateway(
    rpc as never,
    { current: { resolve: (id: string) => ({ id }) } } as never,
    { record: (e: { status: number }) => settled.push(e.status) } as never,
    { modelDone: none } as never,
    { MODEL_SUBJECT_PREFIX: '', REQUEST_TIMEOUT_MS: 30_000 } as never,
    { error: none, warn: none, info: none, debug: none } as never,
    { admitModel: async () => ({ headers: {}, settle: async () => undefined }) } as never,
    {} as never,
    { record: none } as never,
    { begin: none, end: none } as never,
  );
  return { gw, settled };
}

function request() {
  const raw = Object.assign(new EventEmitter(), { writableFinished: false });
  const req = {
    id: 'req_test',
    headers: {},
    body: { model: 'm' },
    auth: { keyId: 'k', memberId: 'mem', tier: 'inference' },
  } as unknown as FastifyRequest;
  const reply = { raw, headers: () => reply } as unknown as FastifyReply;
  return { req, reply, raw };
}

/** Lets the handler reach its await on the service. */
const settle = () => new Promise((r) => setImmediate(r));

describe('ModelGateway: a client that goes away is not a fault', () => {
  for (const route of [unaryRoute, collectedRoute]) {
    it(`${route.collect ? 'collected' : 'unary'}: ends with a 499 (never logged with a stack), not the 500 the service answered the cancel with`, async () => {
      const rpc = fakeRpc();
      const { gw, settled } = gatewayWith(rpc);
      const { req, reply, raw } = request();
      const done = gw.handle(route, req, reply);
      await settle();
      raw.emit('close');
      await assert.rejects(done, (e: unknown) => e instanceof ApiError && e.status === 499);
      assert.deepEqual(settled, [499]);
    });
  }

  it('a failure while the client is still there is passed on as it is', async () => {
    const rpc = fakeRpc();
    const { gw, settled } = gatewayWith(rpc);
    const { req, reply } = request();
    const done = gw.handle(unaryRoute, req, reply);
    await settle();
    rpc.cancel('req_test'); // the service fails on its own (no client close)
    await assert.rejects(done, (e: unknown) => e instanceof ApiError && e.status === 500);
    assert.deepEqual(settled, [500]);
  });
});
