import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { UsageEvent } from '@infer/contracts';
import { connectNats, createLogger, ensureUsageStream, type NatsConnection } from '@infer/service-kit';
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

/** The request ids stored in `stream`, in order, read back with a direct get of each sequence. */
async function storedIds(nc: NatsConnection, stream: string): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  const ids: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (m) ids.push((m.json() as UsageEvent).requestId);
  }
  return ids;
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

  it('an ack that never comes: the event is published again and still stored once', async () => {
    const { stream, root } = await fresh();
    const pub = new UsagePublisher(nc, log, root, { ackTimeoutMs: 200 });
    // Swallow the first ack of the first event, as if it were lost on the way back.
    const inner = pub as unknown as { onAck: (token: string, msg: unknown) => void };
    const original = inner.onAck.bind(pub);
    let dropped = 0;
    inner.onAck = (token, msg) => {
      if (dropped++ === 0) return;
      original(token, msg);
    };
    pub.record(event('req_lost_ack'));
    await waitFor('the retried event acknowledged', () => pub.pending === 0);
    await pub.close();
    assert.ok(dropped >= 2, 'published twice');
    assert.deepEqual(await storedIds(nc, stream), ['req_lost_ack']);
  });
});
