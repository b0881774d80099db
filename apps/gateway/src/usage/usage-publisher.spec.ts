import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '@infer/contracts';
import { connectNats, ensureUsageStream, type NatsConnection } from '@infer/rpc';
import { createLogger } from '@infer/telemetry';
import { jetstreamManager } from '@nats-io/jetstream';
import { waitFor } from '../../../../test/support/wait-for.js';
import { UsagePublisher } from './usage-publisher.js';

const log = createLogger('usage-publisher-test', 'silent');
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const event = (requestId: string, model = 'chat-A'): UsageEvent => ({
  requestId,
  memberId: 'm1',
  keyId: 'k1',
  model,
  endpoint: '/v1/chat/completions',
  promptTokens: 3,
  completionTokens: 1,
  totalTokens: 4,
  status: 200,
  latencyMs: 1,
  at: Date.now(),
});

/** The messages stored in `stream`, in order (subject and events: a batch holds several), read back one by one. */
async function stored(
  nc: NatsConnection,
  stream: string,
): Promise<Array<{ subject: string; ids: string[] }>> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  const out: Array<{ subject: string; ids: string[] }> = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (!m) continue;
    const body = m.json() as UsageEvent | UsageEvent[];
    out.push({ subject: m.subject, ids: (Array.isArray(body) ? body : [body]).map((e) => e.requestId) });
  }
  return out;
}

/** The request ids stored in `stream`, in order. */
async function storedIds(nc: NatsConnection, stream: string): Promise<string[]> {
  return (await stored(nc, stream)).flatMap((m) => m.ids);
}

/** Swallows the first ack the publisher receives, as if it were lost on the way back; counts acks seen. */
function loseFirstAck(pub: UsagePublisher): { seen: number } {
  const inner = pub as unknown as { onAck: (token: number, msg: unknown) => void };
  const original = inner.onAck.bind(pub);
  const acks = { seen: 0 };
  inner.onAck = (token, msg) => {
    if (acks.seen++ === 0) return;
    original(token, msg);
  };
  return acks;
}

describe('UsagePublisher (pipelined JetStream publish, real NATS)', () => {
  let nc: NatsConnection;
  const streams: string[] = [];
  const fresh = async (create = true) => {
    const run = randomBytes(4).toString('hex');
    const stream = `TEST_USAGE_PUB_${run}`;
    const root = `test_usage_pub_${run}`;
    streams.push(stream);
    if (create) await ensureUsageStream(nc, stream, [`${root}.>`]);
    return { stream, root };
  };

  before(async () => {
    nc = await connectNats(NATS_URL, 'usage-publisher-test');
  });
  after(async () => {
    const jsm = await jetstreamManager(nc);
    for (const s of streams) await jsm.streams.delete(s).catch(() => undefined);
    await nc.close();
  });

  it('stores every event exactly once, with at most `window` in flight, and close() waits for the acks', async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root, { window: 16 });
    const ids = Array.from({ length: 500 }, (_, i) => `req_${i}`);
    let maxInFlight = 0;
    const watch = setInterval(() => {
      maxInFlight = Math.max(maxInFlight, pub.inFlight);
    }, 0);
    for (const id of ids) pub.record(event(id, id.endsWith('7') ? 'chat-B' : 'chat-A'));
    assert.equal(pub.pending, 500);
    await pub.close(10_000);
    clearInterval(watch);
    assert.equal(pub.pending, 0);
    assert.ok(maxInFlight <= 16, `at most 16 in flight, saw ${maxInFlight}`);
    assert.deepEqual((await storedIds(nc, stream)).sort(), [...ids].sort());
  });

  it('an event recorded twice (same request id) is stored once: the message id de-duplicates', async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root);
    pub.record(event('req_same'));
    pub.record(event('req_same'));
    pub.record(event('req_other'));
    await pub.close();
    assert.deepEqual((await storedIds(nc, stream)).sort(), ['req_other', 'req_same']);
  });

  it('keeps events while the stream is missing and stores them once it exists (no loss)', async () => {
    const { stream, root } = await fresh(false);
    const lines: string[] = [];
    const seen = createLogger('usage-publisher-test', 'warn', { write: (l: string) => lines.push(l) });
    const pub = new UsagePublisher(nc, seen, root, { window: 4 });
    for (let i = 0; i < 10; i++) pub.record(event(`req_late_${i}`));
    // No stream: JetStream has no responder, the publisher keeps everything and retries with backoff.
    await waitFor('a failed publish', () => lines.some((l) => l.includes('usage publish failed')));
    assert.equal(pub.pending, 10);
    await ensureUsageStream(nc, stream, [`${root}.>`]);
    await waitFor('the backlog published', () => pub.pending === 0, { timeoutMs: 15_000 });
    await pub.close();
    assert.equal((await storedIds(nc, stream)).length, 10);
  });

  it("one turn's events leave as one message per model (at most batchMax each), a lone event as an object", async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root, { batchMax: 8 });
    const a = Array.from({ length: 20 }, (_, i) => `req_a_${i}`);
    const b = ['req_b_0', 'req_b_1'];
    for (const [i, id] of a.entries()) {
      pub.record(event(id, 'chat-A'));
      if (i < 2) pub.record(event(b[i] as string, 'chat-B'));
    }
    await pub.close();
    const msgs = await stored(nc, stream);
    assert.deepEqual(
      msgs.map((m) => m.ids.length).sort((x, y) => x - y),
      [2, 4, 8, 8],
    );
    for (const m of msgs)
      assert.equal(m.subject, `${root}.${m.ids[0]?.startsWith('req_b') ? 'chat-B' : 'chat-A'}`);
    assert.deepEqual(msgs.flatMap((m) => m.ids).sort(), [...a, ...b].sort());
    // Recorded in a later turn, alone: one JSON object, as before batching.
    const pub2 = new UsagePublisher(nc, log, root);
    pub2.record(event('req_alone'));
    await pub2.close();
    const jsm = await jetstreamManager(nc);
    const last = await jsm.streams.getMessage(stream, { last_by_subj: `${root}.chat-A` });
    assert.ok(last);
    assert.equal((last.json() as UsageEvent).requestId, 'req_alone');
  });

  it('an event with logged bodies leaves alone; bodies too large for a message are replaced, the event kept', async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root, { batchMax: 8 });
    pub.record(event('req_plain_0'));
    pub.record({ ...event('req_bodies'), bodies: { request: '{"a":1}', response: '{}' } });
    pub.record(event('req_plain_1'));
    // Control characters escape to 6 bytes each in JSON: 2 x 100 KiB of them is past NATS's 1 MB.
    const huge = '\u0001'.repeat(100 * 1024);
    pub.record({ ...event('req_huge'), bodies: { request: huge, response: huge } });
    await pub.close();
    const msgs = await stored(nc, stream);
    assert.deepEqual(msgs.map((m) => m.ids).sort(), [
      ['req_bodies'],
      ['req_huge'],
      ['req_plain_0', 'req_plain_1'],
    ]);
    const jsm = await jetstreamManager(nc);
    for (const seq of [1, 2, 3]) {
      const m = await jsm.streams.getMessage(stream, { seq });
      const body = m?.json() as UsageEvent | UsageEvent[];
      if (Array.isArray(body) || body.requestId === 'req_plain_0') continue;
      if (body.requestId === 'req_bodies')
        assert.deepEqual(body.bodies, { request: '{"a":1}', response: '{}' });
      else assert.match(body.bodies?.request ?? '', /^\[body not logged: too large/);
    }
  });

  it('batchMax 1: one message per event, as before batching', async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root, { batchMax: 1 });
    for (let i = 0; i < 5; i++) pub.record(event(`req_one_${i}`));
    await pub.close();
    const msgs = await stored(nc, stream);
    assert.equal(msgs.length, 5);
    assert.ok(msgs.every((m) => m.ids.length === 1));
  });

  it('a batch whose ack is lost is sent again whole, under the same id, and stored once', async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root, { ackTimeoutMs: 200 });
    const acks = loseFirstAck(pub);
    for (let i = 0; i < 3; i++) pub.record(event(`req_batch_lost_${i}`));
    await waitFor('the retried batch acknowledged', () => pub.pending === 0);
    await pub.close();
    assert.ok(acks.seen >= 2, 'published twice');
    assert.deepEqual(await stored(nc, stream), [
      { subject: `${root}.chat-A`, ids: ['req_batch_lost_0', 'req_batch_lost_1', 'req_batch_lost_2'] },
    ]);
  });

  it('an ack that never comes: the event is published again and still stored once', async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root, { ackTimeoutMs: 200 });
    const acks = loseFirstAck(pub);
    pub.record(event('req_lost_ack'));
    await waitFor('the retried event acknowledged', () => pub.pending === 0);
    await pub.close();
    assert.ok(acks.seen >= 2, 'published twice');
    assert.deepEqual(await storedIds(nc, stream), ['req_lost_ack']);
  });
});
