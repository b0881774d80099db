import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ServiceRequest } from '@infer/contracts';
import { envelopeJson } from './rpc.js';

const model = {
  id: 'chat-A',
  kind: 'chat',
  owned_by: 'infer',
  created: 1_767_225_600,
  rank: 20,
  description: 'chat, "quoted" \u2028 and é',
  tiers: ['community'],
  allowance: { tokens: 3_000_000_000, period: 'month' },
  capabilities: { streaming: true, reasoning: 'effort' },
  batch_price_factor: 0.5,
  engine: { type: 'simulator', ttft_ms: 0, itl_ms: 0 },
} as unknown as ServiceRequest['model'];

const req = (over: Partial<ServiceRequest> = {}): ServiceRequest => ({
  requestId: 'req_1',
  memberId: 'mem_1',
  keyId: 'key_1',
  model,
  body: { model: 'chat-A', messages: [{ role: 'user', content: 'Hi \ud800 lone surrogate' }], max_tokens: 1 },
  deadline: 1_800_000_000_000,
  stream: false,
  ...over,
});

describe('envelopeJson', () => {
  it('parses to what JSON.stringify of the envelope parses to, and to the same UTF-8 length', () => {
    for (const r of [req(), req({ stream: true, body: undefined }), req({ deadline: Number.NaN })]) {
      const s = envelopeJson(r);
      assert.deepEqual(JSON.parse(s), JSON.parse(JSON.stringify(r)));
      assert.equal(Buffer.byteLength(s), Buffer.byteLength(JSON.stringify(r)));
    }
  });

  it('serialises each catalog entry once, and a new entry object again', () => {
    const first = envelopeJson(req());
    // The same entry object: its JSON is reused (a change made in place would not show).
    (model as { rank: number }).rank = 99;
    assert.equal(envelopeJson(req()), first);
    (model as { rank: number }).rank = 20;
    const other = { ...model, rank: 30 };
    assert.equal(JSON.parse(envelopeJson(req({ model: other }))).model.rank, 30);
  });

  it('falls back to JSON.stringify when there is no entry object', () => {
    const r = req({ model: undefined as unknown as ServiceRequest['model'] });
    assert.equal(envelopeJson(r), JSON.stringify(r));
  });
});
