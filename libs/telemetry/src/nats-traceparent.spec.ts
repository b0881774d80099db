import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { connectNats } from '@infer/rpc';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { ownHeadersWork, TraceparentHeaders } from './nats-traceparent.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const TRACE = 'a1'.repeat(16);
const SPAN = 'b2'.repeat(8);
const TP = `00-${TRACE}-${SPAN}-00`;

describe('TraceparentHeaders: a NATS traceparent header without MsgHdrs', () => {
  it("encodes to the same bytes as the client's own MsgHdrs with that one header", () => {
    const theirs = natsHeaders();
    theirs.set('traceparent', TP);
    const a = (theirs as unknown as { encode(): Uint8Array }).encode();
    assert.deepEqual(Buffer.from(new TraceparentHeaders(TRACE, SPAN, 0).encode()), Buffer.from(a));
    // Sampled, and ids with every hex digit.
    const sampled = natsHeaders();
    sampled.set('traceparent', `00-${'0123456789abcdef'.repeat(2)}-fedcba9876543210-01`);
    assert.deepEqual(
      Buffer.from(new TraceparentHeaders('0123456789abcdef'.repeat(2), 'fedcba9876543210', 1).encode()),
      Buffer.from((sampled as unknown as { encode(): Uint8Array }).encode()),
    );
    assert.equal(ownHeadersWork(), true, 'the start-up check agrees with this nats client');
  });

  it('reads back as MsgHdrs do', () => {
    const h = new TraceparentHeaders(TRACE, SPAN, 0);
    assert.equal(h.get('traceparent'), TP);
    assert.equal(h.get('tracestate'), '');
    assert.deepEqual(h.keys(), ['traceparent']);
    assert.deepEqual([...h], [['traceparent', [TP]]]);
    assert.throws(() => h.set());
  });

  it('arrives through a real NATS server as the traceparent header (publish sends its encode())', async () => {
    const nc = await connectNats(NATS_URL, 'nats-traceparent-spec');
    try {
      const subject = `spec.tp.${randomBytes(6).toString('hex')}`;
      const sub = nc.subscribe(subject, { max: 1 });
      const got = (async () => {
        for await (const m of sub) return m;
        return undefined;
      })();
      await nc.flush();
      nc.publish(subject, 'body', { reply: 'inbox.x', headers: new TraceparentHeaders(TRACE, SPAN, 0) });
      const deadline = setTimeout(() => sub.unsubscribe(), 5_000);
      const m = await got;
      clearTimeout(deadline);
      assert.ok(m, 'the message arrived');
      assert.equal(m.headers?.get('traceparent'), TP);
      assert.deepEqual(m.headers?.keys(), ['traceparent']);
      assert.equal(m.string(), 'body');
      assert.equal(m.reply, 'inbox.x');
    } finally {
      await nc.close();
    }
  });
});
