import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { ApiError, type ResponseObject } from '@infer/contracts';
import { Redis } from 'ioredis';
import { ResponseItemStore } from './response-items.js';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = `test:resp-item:${randomBytes(4).toString('hex')}:`;
after(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const output: ResponseObject['output'] = [
  { id: 'rs_1', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'hm' }] },
  { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}', status: 'completed' },
  {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: 'hi', annotations: [] }],
  },
];

describe('ResponseItemStore (item_reference, real Redis)', () => {
  it('keeps output items per member and replaces references with input items; TTL set', async () => {
    const store = new ResponseItemStore(redis, prefix, 60);
    await store.keep('m1', { output, store: true });
    const body = {
      model: 'chat-E',
      input: [
        { role: 'user', content: 'q' },
        { type: 'item_reference', id: 'rs_1' },
        { type: 'item_reference', id: 'fc_1' },
        { type: 'item_reference', id: 'msg_1' },
      ],
    };
    const out = (await store.resolve('m1', body)) as { model: string; input: unknown[] };
    assert.equal(out.model, 'chat-E');
    assert.deepEqual(out.input, [
      { role: 'user', content: 'q' },
      { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'hm' }] },
      { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] },
    ]);
    const ttl = await redis.ttl(`${prefix}{m1}:msg_1`);
    assert.ok(ttl > 0 && ttl <= 60);
  });

  it('another member, an unknown id or store: false: 400 naming input[i].id; no references, no Redis', async () => {
    const store = new ResponseItemStore(redis, prefix, 60);
    await store.keep('m2', { output, store: true });
    const ref = (id: string) => ({ input: ['x', { type: 'item_reference', id }] });
    for (const [member, id] of [
      ['m3', 'msg_1'],
      ['m2', 'msg_nope'],
    ] as const) {
      await assert.rejects(store.resolve(member, ref(id)), (e: ApiError) => {
        assert.ok(e instanceof ApiError);
        return e.status === 400 && e.param === 'input[1].id';
      });
    }
    await store.keep('m4', { output, store: false });
    await assert.rejects(store.resolve('m4', ref('msg_1')), ApiError);
    const plain = { input: 'hello' };
    assert.equal(await store.resolve('m4', plain), plain);
  });

  it('an unreachable store is a retryable 503, not a 500', async () => {
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on('error', () => undefined);
    const store = new ResponseItemStore(down, prefix, 60);
    await assert.rejects(
      store.resolve('m1', { input: [{ type: 'item_reference', id: 'msg_1' }] }),
      (e: ApiError) => e instanceof ApiError && e.status === 503 && e.code === 'service_unavailable',
    );
    down.disconnect();
  });
});
