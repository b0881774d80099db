import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type UsageEvent, UsageEventSchema, UsageStream } from '@infer/contracts';
import type { UsagePublisher } from '../../usage/usage-publisher.js';
import type { CallOutcome } from '../outcome.js';
import { RequestLogObserver, usageEventOf } from './request-log.observer.js';
import { UsageObserver } from './usage.observer.js';

function outcome(over: Partial<CallOutcome> = {}): CallOutcome {
  return {
    kind: 'model',
    requestId: 'req-1',
    memberId: 'm1',
    keyId: 'k1',
    tier: 'inference',
    model: 'chat-A',
    endpoint: '/v1/chat/completions',
    stream: false,
    batch: false,
    admitted: true,
    status: 200,
    errorCode: null,
    limit: null,
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    started: 0,
    latencyMs: 12.4,
    firstTokenMs: null,
    traceId: undefined,
    at: 1_700_000_000_000,
    ...over,
  } as CallOutcome;
}

/** Collects what would be published (the publisher's own batching is covered by usage-publisher.spec). */
function collector() {
  const events: UsageEvent[] = [];
  const pub = {
    record: (e: UsageEvent) => events.push(e),
    recordAcked: async (e: UsageEvent) => void events.push(e),
  };
  return { events, pub: pub as unknown as UsagePublisher };
}

describe('request log: the usage event is the log record', () => {
  it('a success carries usage and no empty log fields (the event stays as small as before)', () => {
    const ev = usageEventOf(outcome());
    assert.deepEqual(ev, {
      requestId: 'req-1',
      memberId: 'm1',
      keyId: 'k1',
      model: 'chat-A',
      endpoint: '/v1/chat/completions',
      promptTokens: 3,
      completionTokens: 2,
      totalTokens: 5,
      status: 200,
      latencyMs: 12,
      at: 1_700_000_000_000,
    });
    assert.ok(UsageEventSchema.safeParse(ev).success);
  });

  it('a stream failure carries its code, first-token time and trace id', () => {
    const ev = usageEventOf(
      outcome({ status: 502, errorCode: 'upstream_error', firstTokenMs: 40.6, traceId: 'ab'.repeat(16) }),
    );
    assert.equal(ev.errorCode, 'upstream_error');
    assert.equal(ev.firstTokenMs, 41);
    assert.equal(ev.traceId, 'ab'.repeat(16));
    assert.equal(ev.refused, undefined);
    assert.ok(UsageEventSchema.safeParse(ev).success);
  });

  it('a refusal is published once, by the request-log observer, marked refused with zero usage and its limit', () => {
    const { events, pub } = collector();
    const usage = new UsageObserver(pub);
    const rlog = new RequestLogObserver(pub);
    const refusal = outcome({
      admitted: false,
      model: undefined,
      usage: null,
      status: 429,
      errorCode: 'rate_limit_exceeded',
      limit: 'key.requests_per_minute',
    });
    usage.settled(refusal);
    rlog.settled(refusal);
    assert.equal(events.length, 1);
    const ev = events[0]!;
    assert.equal(ev.refused, true);
    assert.equal(ev.status, 429);
    assert.equal(ev.limit, 'key.requests_per_minute');
    assert.equal(ev.totalTokens, 0);
    assert.equal(ev.model, '');
    assert.ok(UsageEventSchema.safeParse(ev).success);
    // Its subject is a valid NATS subject even without a model.
    assert.equal(UsageStream.subject(ev.model, 'usage.events'), 'usage.events._');
  });

  it('an admitted call is published once, by the usage observer (no second publish for the log)', () => {
    const { events, pub } = collector();
    const call = outcome();
    new UsageObserver(pub).settled(call);
    new RequestLogObserver(pub).settled(call);
    assert.equal(events.length, 1);
    assert.equal(events[0]?.refused, undefined);
  });
});
