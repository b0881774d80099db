import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GCProfiler, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CatalogEntrySchema, FrameKind, type ServiceRequest } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { connectNats, type NatsConnection } from './nats.js';
import { encodeFrame, RpcClient, RpcServer } from './rpc.js';

// What the client keeps of a call once it ended, as the garbage collector sees it: the bytes its
// scavenges move to the old generation per call (bench/results/data-path-issue-13.md, "what the gateway promotes").
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const model = CatalogEntrySchema.parse({
  id: 'm',
  kind: 'chat',
  rank: 1,
  tiers: ['inference'],
  engine: { type: 'simulator' },
});
const req = (): ServiceRequest => ({
  requestId: randomUUID(),
  memberId: 'mem',
  keyId: 'key',
  model,
  body: { messages: [{ role: 'user', content: 'Hello' }] },
  deadline: Date.now() + 5_000,
  stream: false,
});

/** Bytes the scavenges of `run` moved to the old generation (old space after minus before, summed). */
async function promotedBy(run: () => Promise<void>): Promise<number> {
  const profiler = new GCProfiler();
  profiler.start();
  await run();
  const { statistics } = profiler.stop() as {
    statistics: {
      gcType: string;
      beforeGC: { heapSpaceStatistics: { spaceName: string; spaceUsedSize: number }[] };
      afterGC: { heapSpaceStatistics: { spaceName: string; spaceUsedSize: number }[] };
    }[];
  };
  const old = (s: { spaceName: string; spaceUsedSize: number }[]) =>
    s.find((x) => x.spaceName === 'old_space')?.spaceUsedSize ?? 0;
  let promoted = 0;
  for (const g of statistics) {
    if (g.gcType !== 'Scavenge') continue;
    promoted += Math.max(0, old(g.afterGC.heapSpaceStatistics) - old(g.beforeGC.heapSpaceStatistics));
  }
  return promoted;
}

/** `calls` calls of `one`, 32 in flight (as the bench's load generator keeps). */
async function drive(calls: number, one: () => Promise<void>): Promise<void> {
  let left = calls;
  const worker = async () => {
    while (left-- > 0) await one();
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

describe('NATS RPC client: what an ended call leaves behind', () => {
  let nc: NatsConnection;
  let client: RpcClient;
  const subject = `test.${randomUUID()}.gc`;
  // An answer with a 4 KB string in it: a call whose end frame outlives the call shows in kilobytes.
  const answer = encodeFrame(
    FrameKind.end,
    JSON.stringify({
      data: { text: 'x'.repeat(4096) },
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }),
  );
  before(async () => {
    nc = await connectNats(NATS_URL, 'rpc-gc-spec');
    nc.subscribe(subject, {
      callback: (_err, msg) => {
        if (msg.reply) nc.publish(msg.reply, answer);
      },
    });
    client = new RpcClient(nc);
    await client.call(subject, req(), { idleTimeoutMs: 5_000 });
  });
  after(async () => {
    client.close();
    await nc.close();
  });

  it('its envelope and end frame are not promoted with the table of calls in flight', async (t) => {
    const calls = 3_000;
    // The client's table in the old generation, as in a gateway that has run for a while.
    gc();
    gc();
    const promoted = await promotedBy(() =>
      drive(calls, async () => {
        const end = await client.call(subject, req(), { idleTimeoutMs: 5_000 });
        assert.equal((end.data as { text: string }).text.length, 4096);
      }),
    );
    // Before: each call (its envelope, its 4 KB end frame) stayed reachable from a replaced table of the
    // Map of calls until a full collection, and was promoted (~2.1 KB per call here); now what little
    // survives is what was in flight at a scavenge.
    t.diagnostic(`${(promoted / calls).toFixed(0)} bytes promoted per call`);
    assert.ok(promoted / calls < 1_000, `${(promoted / calls).toFixed(0)} bytes promoted per call`);
  });
});

describe('NATS RPC server: what a finished request leaves behind', () => {
  let nc: NatsConnection;
  let server: RpcServer;
  let client: RpcClient;
  const subject = `test.${randomUUID()}.gc-server`;
  before(async () => {
    nc = await connectNats(NATS_URL, 'rpc-gc-server-spec');
    server = new RpcServer(nc, `rpc-gc-${randomUUID()}`, createLogger('rpc-gc-spec', 'silent'));
    // The work a handler keeps in its context while it runs: here a 4 KB string its progress report
    // would read, as a handler's closures keep the request's input.
    server.handle(subject, async (r, ctx) => {
      const kept = `${r.requestId}${'y'.repeat(4096)}`;
      ctx.progress = () => ({ prompt_tokens: kept.length, completion_tokens: 0, total_tokens: kept.length });
      return { data: { ok: true }, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
    });
    client = new RpcClient(nc);
    await client.call(subject, req(), { idleTimeoutMs: 5_000 });
  });
  after(async () => {
    client.close();
    await server.close();
    await nc.close();
  });

  it("its work (abort controller, context, the handler's closures) is not promoted with the table of requests in flight", async (t) => {
    const calls = 3_000;
    gc();
    gc();
    const promoted = await promotedBy(() =>
      drive(calls, async () => {
        await client.call(subject, req(), { idleTimeoutMs: 5_000 });
      }),
    );
    t.diagnostic(`${(promoted / calls).toFixed(0)} bytes promoted per request`);
    // Before: 762-1,092 bytes per request (the work reachable from replaced tables of the Map of requests
    // in flight); with the emptied entries 272-276.
    assert.ok(promoted / calls < 500, `${(promoted / calls).toFixed(0)} bytes promoted per request`);
  });
});
