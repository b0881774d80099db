import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ApiError, CatalogEntrySchema, type ServiceRequest } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { connectNats, type NatsConnection } from './nats.js';
import { RpcClient, RpcServer } from './rpc.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const model = CatalogEntrySchema.parse({
  id: 'm',
  kind: 'chat',
  rank: 1,
  tiers: ['inference'],
  engine: { type: 'simulator' },
});
const subject = (s: string) => `test.${randomUUID()}.${s}`;
const req = (body: unknown, stream = false, deadlineMs = 5000): ServiceRequest => ({
  requestId: randomUUID(),
  memberId: 'mem',
  keyId: 'key',
  model,
  body,
  deadline: Date.now() + deadlineMs,
  stream,
});
const dec = new TextDecoder();

describe('NATS RPC', () => {
  let nc: NatsConnection;
  let server: RpcServer;
  let client: RpcClient;
  before(async () => {
    nc = await connectNats(NATS_URL, 'rpc-spec');
    server = new RpcServer(nc, 'rpc-spec', createLogger('rpc-spec', 'silent'));
    client = new RpcClient(nc);
  });
  after(async () => {
    await server.close();
    await nc.close();
  });

  it('answers a unary call with data and usage', async () => {
    const s = subject('echo');
    server.handle<{ x: number }>(s, async (r) => ({
      data: { doubled: r.body.x * 2, model: r.model.id },
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    }));
    await nc.flush();
    const end = await client.call(s, req({ x: 21 }), { idleTimeoutMs: 2000 });
    assert.deepEqual(end.data, { doubled: 42, model: 'm' });
    assert.equal(end.usage.total_tokens, 3);
  });

  it('a request larger than one NATS message fails with a 413 before anything is published', async () => {
    const s = subject('big');
    let handled = 0;
    server.handle(s, async () => {
      handled++;
      return { data: {}, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } };
    });
    await nc.flush();
    const max = nc.info?.max_payload ?? 1024 * 1024;
    const big = req({ text: 'x'.repeat(max) });
    await assert.rejects(
      client.call(s, big, { idleTimeoutMs: 2000 }),
      (e: unknown) => e instanceof ApiError && e.status === 413 && e.code === 'request_too_large',
    );
    const st = client.stream(s, big, { idleTimeoutMs: 2000 });
    await assert.rejects(st.end, (e: unknown) => e instanceof ApiError && e.status === 413);
    // A small request on the same subject is still answered, and the big ones never arrived.
    await client.call(s, req({}), { idleTimeoutMs: 2000 });
    assert.equal(handled, 1);
  });

  it('calls opened in one turn leave together and are each answered; one cancelled before it left never arrives', async () => {
    const s = subject('batch');
    const seen: string[] = [];
    server.handle<{ i: number }>(s, async (r) => {
      seen.push(r.requestId);
      return { data: { i: r.body.i }, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } };
    });
    await nc.flush();
    const reqs = Array.from({ length: 20 }, (_, i) => req({ i }));
    const calls = reqs.map((r) => client.call(s, r, { idleTimeoutMs: 2000 }));
    const gone = client.stream(s, req({ i: -1 }), { idleTimeoutMs: 2000 });
    gone.cancel();
    const unaryGone = req({ i: -2 });
    const unary = assert.rejects(
      client.call(s, unaryGone, { idleTimeoutMs: 2000 }),
      (e: unknown) => e instanceof ApiError && e.status === 499,
    );
    client.cancel(unaryGone.requestId);
    const ends = await Promise.all(calls);
    assert.deepEqual(
      ends.map((e) => (e.data as { i: number }).i),
      reqs.map((_, i) => i),
    );
    await assert.rejects(gone.end, (e: unknown) => e instanceof ApiError && e.status === 499);
    await unary;
    await client.call(s, req({ i: 99 }), { idleTimeoutMs: 2000 }); // after everything before it
    assert.equal(seen.length, 21, 'the 20 calls and the last one; the cancelled ones never left');
  });

  it('streams frames in order, then the end frame', async () => {
    const s = subject('count');
    server.handle(s, async (_r, ctx) => {
      for (let i = 0; i < 50; i++) ctx.emit({ i });
      return { usage: { prompt_tokens: 0, completion_tokens: 50, total_tokens: 50 } };
    });
    await nc.flush();
    const st = client.stream(s, req({}, true), { idleTimeoutMs: 2000 });
    const seen: number[] = [];
    for await (const raw of st) seen.push(JSON.parse(dec.decode(raw)).i);
    assert.deepEqual(
      seen,
      Array.from({ length: 50 }, (_, i) => i),
    );
    assert.equal((await st.end).usage.completion_tokens, 50);
  });

  it('carries an ApiError from the service with its status, code and param', async () => {
    const s = subject('bad');
    server.handle(s, async () => {
      throw ApiError.invalid('temperature is wrong', 'temperature');
    });
    await nc.flush();
    await assert.rejects(client.call(s, req({}), { idleTimeoutMs: 2000 }), (e: ApiError) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, 'temperature');
      return true;
    });
  });

  it('hides internals of unexpected failures behind a clean 500', async () => {
    const s = subject('boom');
    server.handle(s, async () => {
      throw new Error('secret database password in stack');
    });
    await nc.flush();
    await assert.rejects(client.call(s, req({}), { idleTimeoutMs: 2000 }), (e: ApiError) => {
      assert.equal(e.status, 500);
      assert.doesNotMatch(e.message, /secret/);
      return true;
    });
  });

  it('reports a missing service as 503 for unary calls and streams', async () => {
    const s = subject('nobody');
    await assert.rejects(client.call(s, req({}), { idleTimeoutMs: 2000 }), (e: ApiError) => e.status === 503);
    const st = client.stream(s, req({}, true), { idleTimeoutMs: 2000 });
    await assert.rejects(
      async () => {
        for await (const _ of st) {
          /* nothing */
        }
      },
      (e: ApiError) => e.status === 503,
    );
  });

  it('aborts the handler when the client cancels, and still collects its usage', async () => {
    const s = subject('slow');
    server.handle(s, async (_r, ctx) => {
      let produced = 0;
      while (!ctx.signal.aborted) {
        ctx.emit({ token: produced++ });
        await new Promise((r) => setTimeout(r, 5));
      }
      return { usage: { prompt_tokens: 3, completion_tokens: produced, total_tokens: 3 + produced } };
    });
    await nc.flush();
    const st = client.stream(s, req({}, true), { idleTimeoutMs: 2000 });
    let got = 0;
    for await (const _ of st) {
      if (++got === 3) st.cancel();
    }
    assert.equal(got, 3, 'no data after cancel');
    const end = await st.end;
    assert.ok(end.usage.completion_tokens >= 3, 'usage of the work done is reported');
    assert.equal(server.inflightCount, 0);
  });

  it('a handler that throws when its client cancels is not logged as an error (an expected disconnect)', async () => {
    const lines: string[] = [];
    const logged = new RpcServer(
      nc,
      'rpc-spec-logged',
      createLogger('rpc-spec', 'debug', { write: (l: string) => lines.push(l) }),
    );
    const s = subject('throws-on-cancel');
    logged.handle(s, async (_r, ctx) => {
      ctx.emit({ x: 1 });
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      return { usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } };
    });
    const boom = subject('throws');
    logged.handle(boom, async () => {
      throw new Error('a real fault');
    });
    await nc.flush();
    const st = client.stream(s, req({}, true), { idleTimeoutMs: 2000, cancelGraceMs: 2000 });
    for await (const _ of st) st.cancel();
    await st.end.catch(() => undefined);
    await assert.rejects(client.call(boom, req({}), { idleTimeoutMs: 2000 }));
    await logged.close();
    const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
    assert.deepEqual(
      errors.map((l) => l.err?.message),
      ['a real fault'],
      'only the real fault is an error line',
    );
    assert.ok(lines.some((l) => l.includes('cancelled by the client')));
  });

  it('rejects the end after cancel when the service never reports', async () => {
    const s = subject('mute');
    server.handle(s, async (_r, ctx) => {
      ctx.emit({ x: 1 });
      await new Promise((r) => setTimeout(r, 10_000).unref());
      return { usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } };
    });
    await nc.flush();
    const st = client.stream(s, req({}, true), { idleTimeoutMs: 2000, cancelGraceMs: 50 });
    for await (const _ of st) st.cancel();
    await assert.rejects(st.end, (e: ApiError) => e.status === 499);
  });

  it('fails a silent stream after the idle timeout', async () => {
    const s = subject('silent');
    server.handle(s, async () => {
      await new Promise((r) => setTimeout(r, 10_000).unref());
      return { usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } };
    });
    await nc.flush();
    const st = client.stream(s, req({}, true), { idleTimeoutMs: 100 });
    await assert.rejects(
      async () => {
        for await (const _ of st) {
          /* nothing */
        }
      },
      (e: ApiError) => e.status === 500 && /in time/.test(e.message),
    );
  });

  it('answers 524 when the work passes its deadline', async () => {
    const s = subject('late');
    server.handle(s, async (_r, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      throw ctx.signal.reason;
    });
    await nc.flush();
    await assert.rejects(
      client.call(s, req({}, false, 50), { idleTimeoutMs: 2000 }),
      (e: ApiError) => e.status === 524,
    );
  });
});

// What leaves before the end of the turn: an idle replica publishes its first frame at once, a busy one
// batches the turn. Observed on the wire: a second connection sees the messages of the publishing
// connection in the order they were written, and a marker published by a setImmediate queued before the
// frame tells "at once" (the frame first) from "at the end of the turn" (the marker first).
describe('NATS RPC server: an idle replica publishes at once, a busy one per turn', () => {
  let nc: NatsConnection;
  let obs: NatsConnection;
  let server: RpcServer;
  let client: RpcClient;
  before(async () => {
    nc = await connectNats(NATS_URL, 'rpc-spec-lanes');
    obs = await connectNats(NATS_URL, 'rpc-spec-lanes-observer');
    server = new RpcServer(nc, 'rpc-spec-lanes', createLogger('rpc-spec', 'silent'));
    client = new RpcClient(nc);
  });
  after(async () => {
    await server.close();
    await nc.close();
    await obs.close();
  });

  /** The subjects (or the first byte of the payload, for replies) the observer sees, in order. */
  function observe(subjects: string[]): string[] {
    const seen: string[] = [];
    for (const s of subjects) {
      obs.subscribe(s, {
        callback: (_e, m) => {
          const frame = m.subject.startsWith('_INBOX.');
          seen.push(frame ? `frame:${String.fromCharCode(m.data[0] ?? 0)}` : m.subject);
        },
      });
    }
    return seen;
  }
  const until = async (cond: () => boolean) => {
    const deadline = Date.now() + 5000;
    while (!cond()) {
      assert.ok(Date.now() < deadline, 'timed out');
      await new Promise((r) => setImmediate(r));
    }
  };

  it('the server: the first frame of a lone request leaves at once; with two in flight, at the end of the turn', async () => {
    const s = subject('frames');
    const marker = subject('marker');
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    server.handle<{ hold?: boolean }>(s, async (r, ctx) => {
      if (r.body.hold) {
        await gate;
      } else {
        setImmediate(() => nc.publish(marker));
        ctx.emit({ first: true });
      }
      return { usage: { prompt_tokens: 0, completion_tokens: 1, total_tokens: 1 } };
    });
    const seen = observe(['_INBOX.>', marker]);
    await nc.flush();
    await obs.flush();

    const lone = client.stream(s, req({}, true), { idleTimeoutMs: 2000 });
    for await (const _ of lone) {
      // drain
    }
    await lone.end;
    await until(() => seen.length >= 3);
    assert.deepEqual(
      seen.slice(0, 2),
      ['frame:D', marker],
      'the first data frame was written before the marker',
    );

    seen.length = 0;
    const held = client.call(s, req({ hold: true }), { idleTimeoutMs: 2000 });
    const busy = client.stream(s, req({}, true), { idleTimeoutMs: 2000 });
    for await (const _ of busy) {
      // drain
    }
    await busy.end;
    await until(() => seen.includes('frame:E'));
    const m = seen.indexOf(marker);
    const d = seen.indexOf('frame:D');
    assert.ok(
      m >= 0 && d > m,
      `with another request in flight the frame waited for the turn: ${seen.join(' ')}`,
    );
    release();
    await held;
  });
});
