/**
 * The RPC layer when things break (issue 14): heartbeats keep a slow call alive, a replica that dies
 * mid-request is detected within 5 s (503, with the usage it reported), and with NATS down a call
 * fails at once. Runs on a NATS server of its own, which it kills.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ApiError, CatalogEntrySchema, LIVENESS_MS, type ServiceRequest } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { type PrivateServer, privateNats } from '../../../test/support/private-servers.js';
import { connectNats } from './nats.js';
import { RpcClient, RpcServer } from './rpc.js';

const model = CatalogEntrySchema.parse({
  id: 'm',
  kind: 'chat',
  rank: 1,
  tiers: ['inference'],
  engine: { type: 'simulator' },
});
const req = (stream: boolean): ServiceRequest => ({
  requestId: randomUUID(),
  memberId: 'mem',
  keyId: 'key',
  model,
  body: {},
  deadline: Date.now() + 60_000,
  stream,
});
const log = createLogger('rpc-faults', 'silent');
const until = (signal: AbortSignal) =>
  new Promise<void>((r) =>
    signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true }),
  );

describe('NATS RPC under faults', () => {
  let nats: PrivateServer;
  before(async () => {
    nats = await privateNats();
  });
  after(async () => {
    await nats?.destroy();
  });

  it('a slow unary call stays alive on heartbeats past the liveness limit', async () => {
    const serverNc = await connectNats(nats.url, 'faults-server');
    const clientNc = await connectNats(nats.url, 'faults-client');
    const server = new RpcServer(serverNc, `q-${randomUUID()}`, log);
    const s = `slow.${randomUUID()}`;
    server.handle(s, async () => {
      await new Promise((r) => setTimeout(r, LIVENESS_MS + 1_000));
      return { data: 'late but fine', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
    });
    await serverNc.flush();
    try {
      const end = await new RpcClient(clientNc).call(s, req(false), { idleTimeoutMs: 30_000 });
      assert.equal(end.data, 'late but fine');
    } finally {
      await server.close();
      await serverNc.close();
      await clientNc.close();
    }
  });

  it('a replica that dies mid-stream: 503 within 5 s, with the usage it last reported', async () => {
    const serverNc = await connectNats(nats.url, 'faults-dying-server');
    const clientNc = await connectNats(nats.url, 'faults-client');
    const server = new RpcServer(serverNc, `q-${randomUUID()}`, log);
    const s = `dies.${randomUUID()}`;
    let sent = 0;
    server.handle(s, async (_r, ctx) => {
      ctx.progress = () => ({ prompt_tokens: 2, completion_tokens: sent, total_tokens: 2 + sent });
      while (!ctx.signal.aborted && sent < 10) {
        ctx.emit({ i: sent++ });
        await new Promise((r) => setTimeout(r, 5));
      }
      await until(ctx.signal); // then hangs: the process "dies" below
      return { usage: { prompt_tokens: 2, completion_tokens: sent, total_tokens: 2 + sent } };
    });
    await serverNc.flush();
    try {
      const st = new RpcClient(clientNc).stream(s, req(true), { idleTimeoutMs: 120_000 });
      let got = 0;
      const consumed = (async () => {
        try {
          for await (const _ of st) got++;
          return null;
        } catch (e) {
          return e;
        }
      })();
      // Let a heartbeat carry the progress, then the replica vanishes without a word.
      const deadline = Date.now() + 5_000;
      while (!(got === 10 && st.partialUsage) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      const t0 = Date.now();
      await serverNc.close(); // a dead replica: no end frame, no heartbeats
      const err = await consumed;
      const took = Date.now() - t0;
      assert.ok(err instanceof ApiError, 'the stream ended with an error');
      assert.equal(err.status, 503);
      assert.equal(err.code, 'service_unavailable');
      assert.ok(took < 5_000, `detected within 5 s (${took} ms)`);
      assert.equal(got, 10);
      assert.deepEqual(st.partialUsage, { prompt_tokens: 2, completion_tokens: 10, total_tokens: 12 });
    } finally {
      await server.close().catch(() => undefined);
      await clientNc.close();
    }
  });

  it('with NATS down, a new call is a 503 at once, and calls work again once it is back', async () => {
    const own = await privateNats();
    const serverNc = await connectNats(own.url, 'faults-server');
    const clientNc = await connectNats(own.url, 'faults-client');
    const server = new RpcServer(serverNc, `q-${randomUUID()}`, log);
    const s = `echo.${randomUUID()}`;
    server.handle(s, async () => ({
      data: 'pong',
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    }));
    await serverNc.flush();
    const client = new RpcClient(clientNc);
    try {
      assert.equal((await client.call(s, req(false), { idleTimeoutMs: 5_000 })).data, 'pong');
      await own.stop();
      const deadline = Date.now() + 5_000;
      while (client.isConnected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const t0 = Date.now();
      const err = await client.call(s, req(false), { idleTimeoutMs: 5_000 }).catch((e: unknown) => e);
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 503);
      assert.ok(Date.now() - t0 < 2_000, 'at once');
      // The same port again: both connections reconnect by themselves.
      await own.start();
      try {
        const back = Date.now() + 10_000;
        let answer: unknown = null;
        while (answer === null && Date.now() < back) {
          answer = await client
            .call(s, req(false), { idleTimeoutMs: 2_000 })
            .then((e) => e.data)
            .catch(() => null);
          if (answer === null) await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(answer, 'pong', 'recovered without a restart');
      } finally {
        await server.close().catch(() => undefined);
        await serverNc.close().catch(() => undefined);
        await clientNc.close().catch(() => undefined);
        await own.destroy();
      }
    } finally {
      await serverNc.close().catch(() => undefined);
      await clientNc.close().catch(() => undefined);
    }
  });
});
