import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { ApiError, type EndFrame } from '@infer/contracts';
import { NatsRpcClientProxy } from '@infer/rpc';
import { Test } from '@nestjs/testing';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { CallSettlement } from '../call/call-settlement.service.js';
import { GovernedCall } from '../call/governed-call.js';
import { CALL_OBSERVERS, type CallObserver, type CallOutcome } from '../call/outcome.js';
import { ParkedResults } from '../call/parked-results.store.js';
import { CatalogService } from '../catalog/catalog.service.js';
import { GATEWAY_CONFIG } from '../config.js';
import { LOGGER } from '../infra/tokens.js';
import { LimitsService } from '../limits/limits.service.js';
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

/** The usage observer's view: the status of each settled call that reached the service. */
class RecordingObserver implements CallObserver {
  readonly settledStatuses: number[] = [];
  settled(c: CallOutcome): void {
    if (c.admitted) this.settledStatuses.push(c.status);
  }
}

/** Limits that admit everything (a named fake: the real ones are covered by limits.store.spec.ts). */
const admitAll = {
  admitModel: async () => ({ headers: {}, settle: async () => undefined }),
  admitSearch: async () => ({ headers: {}, settle: async () => undefined }),
};

const quietLog = { error() {}, warn() {}, info() {}, debug() {} };

async function gatewayWith(rpc: ReturnType<typeof fakeRpc>) {
  const observer = new RecordingObserver();
  const mod = await Test.createTestingModule({
    providers: [
      ModelGateway,
      GovernedCall,
      CallSettlement,
      { provide: CALL_OBSERVERS, useValue: [observer] },
      { provide: NatsRpcClientProxy, useValue: rpc },
      { provide: LimitsService, useValue: admitAll },
      { provide: ParkedResults, useValue: { take: async () => null } },
      {
        provide: CatalogService,
        useValue: { current: { resolve: (id: string) => ({ id }), fallbacksFor: () => undefined } },
      },
      { provide: GATEWAY_CONFIG, useValue: { MODEL_SUBJECT_PREFIX: '', REQUEST_TIMEOUT_MS: 30_000 } },
      { provide: LOGGER, useValue: quietLog },
    ],
  }).compile();
  return { gw: mod.get(ModelGateway), settled: observer.settledStatuses };
}

function request() {
  const raw = Object.assign(new EventEmitter(), { writableFinished: false });
  const req = {
    id: 'req_test',
    headers: {},
    body: { model: 'm' },
    auth: { keyId: 'k', memberId: 'mem', tier: 'inference' },
  } as unknown as FastifyRequest;
  const reply = { raw, headers: () => reply, getHeader: () => undefined } as unknown as FastifyReply;
  return { req, reply, raw };
}

/** Lets the handler reach its await on the service. */
const settle = () => new Promise((r) => setImmediate(r));

describe('ModelGateway: a client that goes away is not a fault', () => {
  for (const route of [unaryRoute, collectedRoute]) {
    it(`${route.collect ? 'collected' : 'unary'}: ends with a 499 (never logged with a stack), not the 500 the service answered the cancel with`, async () => {
      const rpc = fakeRpc();
      const { gw, settled } = await gatewayWith(rpc);
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
    const { gw, settled } = await gatewayWith(rpc);
    const { req, reply } = request();
    const done = gw.handle(unaryRoute, req, reply);
    await settle();
    rpc.cancel('req_test'); // the service fails on its own (no client close)
    await assert.rejects(done, (e: unknown) => e instanceof ApiError && e.status === 500);
    assert.deepEqual(settled, [500]);
  });
});
